// The parameters of one block graph (train.h Transformer), named by their
// index in ParamInfo order:
//   - a flat float vector for the parameters held as floats (everything of
//     a model that trains);
//   - projection weights packed once for the GEMM (an inference model:
//     packed_weights), in float32 panels or, with packed_half, 16-bit ones;
//     or, written with WriteQuant, as the GGUF rows of GGML blocks (Q8_0,
//     Q4_0) they came in. A packed projection's storage is allocated by its
//     first write (so a quantized one never holds float panels on the way);
//     one never written holds nothing and acts as zeros;
//   - row tables (the token embedding of an inference model): [rows, cols]
//     held as plain float rows or, written with WriteQuant, as the GGUF
//     rows of GGML blocks they came in (a lookup dequantizes its row; a tied
//     head reads the blocks through GemvQuant/GemmQuant); allocated by the
//     first write, as the packed projections;
//   - optionally, a 16-bit copy of a tied LM head's rows (the embedding) for
//     the GEMV of decoding, used once every row was written from 16 bits.
// The flat layout of CopyAll / WriteAll is ParamInfo::offset: every
// parameter, packed or not, torch layout, in registration order.
#ifndef ATTNLAB_TRAIN_WEIGHT_STORE_H_
#define ATTNLAB_TRAIN_WEIGHT_STORE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "internal.h"
#include "kernels/kernels.h"
#include "train/train.h"

namespace attnlab {
namespace train {

class WeightStore {
 public:
  // Registers a parameter and returns its index; `packed`: held packed for
  // the GEMM (a 2-D projection [out, in] of an inference model); `table`:
  // a row table (a 2-D embedding of an inference model, read by rows).
  int64_t Add(const std::string& name, std::vector<int64_t> shape, bool decay, bool packed,
              bool table = false);
  // Allocates the float parameters, zeroed, and sets the kind of the packed
  // panels that writes of float or 16-bit rows create (half: 0 float32, 1
  // F16, 2 BF16, kernels::HalfKind). false: out of memory.
  bool Allocate(int32_t half);
  // A 16-bit copy of the embedding rows (parameter `embed`, [vocab, e]) for
  // a tied head; false (and no copy) when there is no room for it.
  bool EnableHeadCopy(int64_t embed, int32_t half);

  const std::vector<ParamInfo>& infos() const { return infos_; }
  int64_t count() const { return count_; }    // floats of the flat layout
  int64_t stored() const { return stored_; }  // floats held as floats
  // Float storage of parameter i; null when i < 0, it is packed, or it is a
  // row table held as blocks or never written.
  float* Data(int64_t i);
  const float* Data(int64_t i) const { return const_cast<WeightStore*>(this)->Data(i); }
  // The packed weight of parameter i; null when i < 0 or it is not packed
  // (a row table is not).
  const kernels::PackedB* Packed(int64_t i) const;
  // A row table held as GGML blocks, as a PackedB whose `quant` is set (for
  // the linear driver: a tied head); null otherwise.
  const kernels::PackedB* TableBlocks(int64_t i) const;
  // Row r of a 2-D parameter i that is held as floats or a row table, as
  // floats (a table's blocks dequantized; a table never written: zeros).
  void Row(int64_t i, int64_t r, float* out) const;
  // The ggml type id (kernels::QuantKind) parameter i is held in, or 0 when
  // it is not held as GGML blocks.
  int32_t QuantKindOf(int64_t i) const;
  // The blocks of parameter i as held (its rows, GGUF layout) and their
  // bytes; null and 0 when it is not held as GGML blocks.
  const uint8_t* QuantBlocks(int64_t i, int64_t* bytes) const;
  float* floats() { return params_.data(); }
  const float* floats() const { return params_.data(); }

  // Rows [first, first + rows) of parameter i (torch [out, in] rows, or
  // with `transposed` rows of the transposed weight), ld floats apart.
  Status Write(int64_t i, int64_t first, int64_t rows, const float* src, int64_t ld,
               bool transposed);
  // The same from 16-bit values (kind 1 F16, 2 BF16); finite-checked.
  Status WriteHalf(int64_t i, int64_t first, int64_t rows, const uint16_t* src, int64_t ld,
                   bool transposed, int32_t kind);
  // Rows [first, first + rows) of parameter i from GGML blocks (kind
  // kernels::QuantKind: 8 Q8_0, 2 Q4_0, 12 Q4_K, 14 Q6_K), each row C /
  // QuantBlockValues blocks of the GGUF layout, `bytes` = rows · row bytes.
  // A packed projection or a row table keeps them as they are (all its rows
  // of one kind; a write of all its rows replaces whatever it held); any
  // other parameter gets their dequantized floats.
  // Scales must be finite.
  Status WriteQuant(int64_t i, int64_t first, int64_t rows, int32_t kind, const uint8_t* src,
                    int64_t bytes);
  // Whether any projection is held as GGML blocks.
  bool HasQuant() const;
  void CopyAll(float* out) const;     // the flat layout (blocks dequantized)
  void WriteAll(const float* data);   // the flat layout (finite, checked by the caller)
  Status CheckFinite() const;         // the float and float32-packed parameters

  bool HeadCopyReady() const;
  const kernels::HalfMatrix& head_copy() const { return head16_w_; }
  int64_t HeadCopyBytes() const { return HeadCopyReady() ? head16_.bytes() : 0; }
  // Bytes held: the float vector, the packed panels or blocks and the head
  // copy.
  int64_t Bytes() const;

 private:
  // A projection held packed for the GEMM: W [out, in] as B [in, out] in
  // panels (kernels::PackB), with packed_half the same panels of 16-bit
  // values (pb.half: buf holds uint16_t), or W's rows of GGML blocks
  // (pb.quant: buf holds the bytes). buf is empty until the first write.
  // A row table (`table`) uses the same record: buf holds its float rows
  // (pb empty) or its blocks (pb.quant).
  struct PackedWeight {
    internal::AlignedBuffer buf;
    kernels::PackedB pb;
    int64_t out = 0, in = 0;
    bool table = false;
  };
  PackedWeight* PackedOf(int64_t i) const;
  // The float32 or 16-bit panels of `w` (the kind half_), allocated and
  // zeroed on the first write; a no-op once they exist.
  Status EnsurePanels(int64_t i, PackedWeight* w);
  void ForgetHeadRows(int64_t first, int64_t rows);

  std::vector<ParamInfo> infos_;
  // Per parameter: its first float in params_, or -1 when packed (then
  // packed_index_ names its PackedWeight).
  std::vector<int64_t> float_offset_, packed_index_;
  std::vector<std::unique_ptr<PackedWeight>> packed_;
  internal::AlignedBuffer params_;
  int64_t count_ = 0, stored_ = 0;
  int32_t half_ = 0;  // the panels' kind (Allocate)
  // The head copy: [V, E] rows as the file holds them (kernels::HalfMatrix).
  int64_t head_param_ = -1;
  internal::AlignedBuffer head16_;
  kernels::HalfMatrix head16_w_;
  std::vector<uint8_t> head16_row_;
  int64_t head16_rows_ = 0;
};

// Elements of a parameter, and its [R, C] (a vector is [1, n]).
int64_t Elements(const ParamInfo& info);
void RowsCols(const ParamInfo& info, int64_t* r, int64_t* c);

}  // namespace train
}  // namespace attnlab

#endif  // ATTNLAB_TRAIN_WEIGHT_STORE_H_

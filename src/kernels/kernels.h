// Internal kernel interface. Kernels take raw views (pointer, sizes, strides),
// write into caller-provided outputs and never validate: the ops in src/*.cpp
// validate first. Each kernel exists twice, behind the same names:
//   simd::    written once on xsimd, for the compile-time default arch
//             (AVX2/AVX-512 natively, SSE4.1 lowered to wasm SIMD128)
//   scalar::  plain loops; the wasm-scalar backend and the tests' oracle.
// Dispatch picks one at run time natively (see UseScalarKernels) and at
// compile time in wasm (ATTNLAB_SIMD).
#ifndef ATTNLAB_KERNELS_KERNELS_H_
#define ATTNLAB_KERNELS_KERNELS_H_

#include <cstdint>
#include <cstring>

#include "attention_lab.h"

#ifndef ATTNLAB_SIMD
#define ATTNLAB_SIMD 1
#endif

namespace attnlab {
namespace kernels {

// The 16-bit float formats a packed B may hold (PackedB::half).
enum class HalfKind : int32_t { kNone = 0, kF16 = 1, kBF16 = 2 };

// GGML's block quantizations (ggml-common.h block_q8_0 / block_q4_0; the
// ids are ggml_type's, as a GGUF tensor info names them). A block holds 32
// consecutive values of a row: an F16 scale d, then
//   Q8_0: 32 int8 q,                    value i = d·q[i]          (34 bytes)
//   Q4_0: 16 bytes of nibbles qs,       value i = d·((qs[i] & 15) − 8),
//         value i + 16 = d·((qs[i] >> 4) − 8), i < 16            (18 bytes)
// (ggml-quants.c dequantize_row_q8_0 / dequantize_row_q4_0). Each product is
// exact in float32 (11 + 8 significant bits), so "the dequantized weight" is
// one float32 value, whatever order a kernel multiplies in.
// The K-quants (block_q4_K / block_q6_K) hold 256 values a super-block:
//   Q4_K: F16 d, F16 dmin, 12 bytes of 6-bit scales and mins (sc, m) of 8
//         sub-blocks of 32 (get_scale_min_k4), 128 bytes of nibbles: bytes
//         32g..32g+31 hold sub-block 2g in their low nibbles and 2g + 1 in
//         their high ones; value = (d·sc)·q − (dmin·m)             (144 bytes)
//   Q6_K: 128 bytes ql (low 4 bits), 64 bytes qh (high 2 bits), 16 int8
//         scales of sub-blocks of 16, F16 d last; value = (d·sc)·(q − 32);
//         in each half of 128 values, l < 32: value l from ql[l] low and qh[l]
//         bits 0–1, l + 32 from ql[l + 32] low and bits 2–3, l + 64 from
//         ql[l] high and bits 4–5, l + 96 from ql[l + 32] high and bits 6–7
//         (dequantize_row_q4_K / dequantize_row_q6_K)               (210 bytes)
// Their values are two float32 products (and a difference) away from the
// quants, so a kernel's order of operations moves them by rounding only.
enum class QuantKind : int32_t { kNone = 0, kQ4_0 = 2, kQ8_0 = 8, kQ4_K = 12, kQ6_K = 14 };
constexpr int64_t kQuantBlock = 32;    // values a Q8_0/Q4_0 block
constexpr int64_t kQuantSuper = 256;   // values a K-quant super-block (QK_K)

// Bytes of one block; 0 for kNone or an unknown id.
inline int64_t QuantBlockBytes(QuantKind kind) {
  switch (kind) {
    case QuantKind::kQ8_0: return 34;
    case QuantKind::kQ4_0: return 18;
    case QuantKind::kQ4_K: return 144;
    case QuantKind::kQ6_K: return 210;
    default: return 0;
  }
}
// Values of one block: 32 or 256.
inline int64_t QuantBlockValues(QuantKind kind) {
  return kind == QuantKind::kQ4_K || kind == QuantKind::kQ6_K ? kQuantSuper : kQuantBlock;
}
inline bool IsQuantKind(int32_t id) {
  return QuantBlockBytes(static_cast<QuantKind>(id)) != 0;
}
inline const char* QuantKindName(QuantKind kind) {
  switch (kind) {
    case QuantKind::kQ8_0: return "Q8_0";
    case QuantKind::kQ4_0: return "Q4_0";
    case QuantKind::kQ4_K: return "Q4_K";
    case QuantKind::kQ6_K: return "Q6_K";
    default: return "none";
  }
}

// W [N, K] as rows of GGML blocks, the GGUF layout of a 2-D tensor: row n
// (K / QuantBlockValues blocks) at data + n·ld bytes. No alignment needed.
struct QuantMatrix {
  const uint8_t* data = nullptr;
  int64_t ld = 0;  // bytes between rows (K / 32 · QuantBlockBytes(kind) when dense)
  QuantKind kind = QuantKind::kNone;
};

// One row of K values (K a multiple of the block) dequantized to float,
// exactly as ggml's dequantize_row_*: out[i] = d·q as above. Plain code
// shared by both sets.
void DequantizeRow(QuantKind kind, const uint8_t* row, int64_t k, float* out);
// The F16 scale of a Q8_0/Q4_0 block (its first two bytes, little-endian).
inline uint16_t QuantScaleBits(const uint8_t* block) {
  return static_cast<uint16_t>(block[0] | (block[1] << 8));
}
// Whether a block's F16 scales (d; and Q4_K's dmin) are finite.
inline bool QuantScalesFinite(QuantKind kind, const uint8_t* block) {
  auto finite = [](const uint8_t* p) { return ((p[0] | (p[1] << 8)) & 0x7c00) != 0x7c00; };
  if (kind == QuantKind::kQ4_K) return finite(block) && finite(block + 2);
  if (kind == QuantKind::kQ6_K) return finite(block + 208);
  return finite(block);
}

// A GEMM right-hand side B [K, N], packed in panels of `nr` columns:
//   B(k, n) = data[(n / nr) * panel_stride + k * nr + n % nr]
// Columns past N in the last panel are zero. The K-prefix and the N-prefix of
// a packed matrix are themselves valid packed matrices (same nr and stride).
struct PackedB {
  const float* data = nullptr;
  int64_t nr = 0;
  int64_t panel_stride = 0;
  // 16-bit panels instead (a loaded model's F16 or BF16 projections, kept as
  // the file holds them: half the bytes a decoding step streams). Then data
  // is null and `half` holds the values, in the same panels, each panel row's
  // nr values in the lane order of HalfLane; the kernels widen them to float
  // exactly (HalfToFloat) as they read them, so a product over them equals the
  // product over the same values converted to float32 first, bit for bit.
  const uint16_t* half = nullptr;
  HalfKind kind = HalfKind::kNone;
  // GGML blocks instead (QuantMatrix below: a loaded model's Q8_0 or Q4_0
  // projection, kept as the file holds it). Then data and half are null,
  // nr and panel_stride 0, and the linear driver runs GemvQuant/GemmQuant.
  QuantMatrix quant{};
};

// Where column c (0 <= c < nr) of a panel row sits in a 16-bit panel: with
// nr even, columns [0, nr/2) take the even slots and [nr/2, nr) the odd ones,
// so one 32-bit lane holds columns c and c + nr/2, and a SIMD load of a row
// widens into its low and high halves by shifts and masks alone (simd.h
// WidenHalves). Odd nr (the scalar kernels' single panel): in order.
inline int64_t HalfLane(int64_t nr, int64_t c) {
  if (nr % 2 != 0) return c;
  const int64_t h = nr / 2;
  return c < h ? 2 * c : 2 * (c - h) + 1;
}

// B(k, n) of a 16-bit packed B: its offset in b.half.
inline int64_t HalfOffset(const PackedB& b, int64_t k, int64_t n) {
  return (n / b.nr) * b.panel_stride + k * b.nr + HalfLane(b.nr, n % b.nr);
}

// W [N, K] in 16-bit rows (GemvTHalf; a loaded model's tied LM head): row n
// at data + n·ld, each group of `group` elements in the lane order of
// HalfLane(group, ·), so one SIMD load widens into the group's two halves in
// order. group = HalfRowGroup() of the kernel set that reads it.
struct HalfMatrix {
  const uint16_t* data = nullptr;
  int64_t ld = 0;
  int64_t group = 1;
  HalfKind kind = HalfKind::kNone;
};

// Where element c of a HalfMatrix row sits.
inline int64_t HalfRowOffset(const HalfMatrix& w, int64_t c) {
  return c - c % w.group + HalfLane(w.group, c % w.group);
}

// One 16-bit value as float, exactly. F16: the 15 magnitude bits placed under
// float32's exponent and scaled by 2^112 (normal and subnormal values alike);
// Inf and NaN (exponent 31) do not survive, so the loader rejects them first
// (IsHalfFinite). BF16: the top half of a float32.
inline float HalfToFloat(uint16_t h, HalfKind kind) {
  uint32_t bits;
  float f;
  if (kind == HalfKind::kBF16) {
    bits = static_cast<uint32_t>(h) << 16;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  bits = static_cast<uint32_t>(h & 0x7fffu) << 13;
  std::memcpy(&f, &bits, 4);
  f *= 0x1p112f;
  return (h & 0x8000u) ? -f : f;
}

inline bool IsHalfFinite(uint16_t h, HalfKind kind) {
  return kind == HalfKind::kBF16 ? (h & 0x7f80u) != 0x7f80u : (h & 0x7c00u) != 0x7c00u;
}

// The columns [col, …) of a packed B as a PackedB of their own, when col
// starts a panel (col % nr == 0); false when it does not (e.g. the scalar
// kernels' single panel of width n). No copy: the panels are shared.
inline bool PackedColumns(const PackedB& b, int64_t col, PackedB* out) {
  if (b.quant.data != nullptr) {  // columns of B are rows of W
    *out = b;
    out->quant.data = b.quant.data + col * b.quant.ld;
    return true;
  }
  if ((b.data == nullptr && b.half == nullptr) || b.nr <= 0 || col % b.nr != 0) return false;
  const int64_t skip = (col / b.nr) * b.panel_stride;
  *out = PackedB{b.data ? b.data + skip : nullptr, b.nr, b.panel_stride,
                 b.half ? b.half + skip : nullptr, b.kind};
  return true;
}

// One attention problem set: N = B·H independent [Lq, Lk] heads, each tensor
// addressed as base + b*sb + h*sh + row*sl + col (col contiguous).
struct AttentionView {
  int64_t batch = 1, heads = 1, lq = 0, lk = 0, d = 0, dv = 0;
  const float* q = nullptr;
  int64_t q_sb = 0, q_sh = 0, q_sl = 0;
  const float* k = nullptr;
  int64_t k_sb = 0, k_sh = 0, k_sl = 0;
  const float* v = nullptr;
  int64_t v_sb = 0, v_sh = 0, v_sl = 0;
  float* out = nullptr;
  int64_t o_sb = 0, o_sh = 0, o_sl = 0;
  // GQA: k and v have kv_heads heads (0: heads); query head h reads kv head
  // h·kv_heads/heads (k + b*k_sb + (h·kv_heads/heads)*k_sh).
  int64_t kv_heads = 0;
  float scale = 1.0f;
  float softcap = 0.0f;  // > 0: s = softcap·tanh(s·scale / softcap)
  // Mask: causal/padding/window per batch, tensor strides over [B, H, Lq, Lk].
  // Query i sits at p_i = i + offset, offset = len_b - Lq for kBottomRight
  // (len_b = lengths[b] or Lk), else causal_offset / window_offset (0:
  // top-left aligned).
  // Causal: query i sees keys j <= p_i. Window: p_i - left <= j <= p_i +
  // right (-1: unbounded).
  bool causal = false;
  Align causal_align = Align::kTopLeft;
  int64_t causal_offset = 0;
  const int32_t* lengths = nullptr;
  bool window = false;
  int64_t window_left = -1, window_right = -1;
  Align window_align = Align::kTopLeft;
  int64_t window_offset = 0;
  // ALiBi: scores += -slope_h·|p_i - j| (p_i from causal_align); slopes [H],
  // null with alibi set: AlibiSlope(h, H).
  bool alibi = false;
  const float* alibi_slopes = nullptr;
  float fill = kMaskFill;  // masked scores: finite or -inf
  MaskKind mask_kind = MaskKind::kNone;
  const float* mask = nullptr;
  int64_t m_sb = 0, m_sh = 0, m_sq = 0, m_sk = 0;
  // Optional weights: [B, H, Lq, Lk], or [B, Lq, Lk] summed·(1/H) if averaged.
  float* weights = nullptr;
  bool average_weights = false;
};

// The ALiBi paper's default slope of head h of H (see AlibiSlopes).
float AlibiSlope(int64_t h, int64_t heads);

// Scratch the attention core needs, in floats, for one call.
int64_t AttentionScratchFloats(const AttentionView& view);

// The trace of the core (ForwardTrace): scaled scores Q·Kᵀ·scale and the
// masked scores [B, H, Lq, Lk] of `view` (either output may be null), with
// the core's row rules (tensor mask, causal/padding fill).
void AttentionTraceScores(const AttentionView& view, float* scores, float* capped,
                          float* masked);

// Weights [B, H, Lq, Lk] → `out`: a copy, or averaged over heads
// ([B, Lq, Lk], summed in head order·(1/H) as the core does).
void CopyTraceWeights(const AttentionView& view, const float* weights, float* out);

#define ATTNLAB_KERNEL_SET                                                    \
  int64_t GemmNr(int64_t n);                                                  \
  int64_t PackedFloats(int64_t k, int64_t n);                                 \
  /* B(k, n) = src[k * sk + n * sn] */                                        \
  PackedB PackB(int64_t k, int64_t n, const float* src, int64_t sk,           \
                int64_t sn, float* out);                                      \
  /* C[M, N] = A[M, K]·B + bias (bias may be null); A rows lda apart. */      \
  void Gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,     \
            const PackedB& b, const float* bias, float* c, int64_t ldc);      \
  /* C[M, N] += A[M, K]·B */                                                  \
  void GemmAcc(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,  \
               const PackedB& b, float* c, int64_t ldc);                      \
  /* C[M, N] = A[M, K]·W[N, K]ᵀ + bias, W unpacked (torch layout, rows */     \
  /* ldw apart): Gemm over PackB(W) bit for bit, without a packed copy of */  \
  /* W (each task packs the column slice it computes into its own scratch) */ \
  void GemmT(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,    \
             const float* w, int64_t ldw, const float* bias, float* c,        \
             int64_t ldc);                                                    \
  /* y[M, N] = x[M, K]·W[N, K]ᵀ + bias, W rows ldw apart (torch layout, */    \
  /* unpacked): the GEMV of decoding (small M). */                            \
  void GemvT(int64_t m, int64_t n, int64_t k, const float* x, int64_t ldx,    \
             const float* w, int64_t ldw, const float* bias, float* y,        \
             int64_t ldy);                                                    \
  /* GemvT over 16-bit rows (K % group == 0, rows aligned as a float */     \
  /* vector): the outputs of GemvT over their float values, bit for bit. */  \
  int64_t HalfRowGroup();                                                     \
  void GemvTHalf(int64_t m, int64_t n, int64_t k, const float* x,             \
                 int64_t ldx, const HalfMatrix& w, const float* bias,         \
                 float* y, int64_t ldy);                                      \
  /* y[M, N] = x[M, K]·B + bias over a packed B (weights packed once). */     \
  void GemvPacked(int64_t m, int64_t n, int64_t k, const float* x,            \
                  int64_t ldx, const PackedB& b, const float* bias, float* y, \
                  int64_t ldy);                                               \
  /* y[M, N] = x[M, K]·Wᵀ + bias over GGML blocks (quant.cpp): the GEMV */  \
  /* of decoding (small M), reading each block once. scratch: */              \
  /* QuantGemvScratchFloats(m, k) floats, 64-byte aligned (null: a plain */   \
  /* loop); results equal a float GEMV over the dequantized W up to the */    \
  /* summation order. */                                                      \
  int64_t QuantGemvScratchFloats(int64_t m, int64_t k);                       \
  void GemvQuant(int64_t m, int64_t n, int64_t k, const float* x,             \
                 int64_t ldx, const QuantMatrix& w, const float* bias,        \
                 float* y, int64_t ldy, float* scratch);                      \
  /* The same for many rows (prefill): W dequantized into the GEMM's */       \
  /* float panels a slice at a time (SIMD: inside Gemm, per thread; */        \
  /* scalar: column chunks into scratch, PackB). scratch: */                  \
  /* QuantGemmScratchFloats(k, n) floats, 64-byte aligned. */                 \
  int64_t QuantGemmScratchFloats(int64_t k, int64_t n);                       \
  void GemmQuant(int64_t m, int64_t n, int64_t k, const float* a,             \
                 int64_t lda, const QuantMatrix& w, const float* bias,        \
                 float* c, int64_t ldc, float* scratch);                      \
  /* The MLP activations (activation.cpp): gelu_new, erf GELU, SwiGLU. */     \
  void GeluTanh(int64_t n, const float* x, float* y);                         \
  void Gelu(int64_t n, const float* x, float* y);                             \
  void SwiGlu(int64_t n, const float* gate, const float* up, float* y);       \
  /* scratch: AttentionScratchFloats(view) floats, 64-byte aligned. */        \
  void AttentionCore(const AttentionView& view, float* scratch);              \
  /* y = LN(x + r)·gamma + beta per row; r, gamma, beta may be null. */       \
  void AddLayerNorm(int64_t rows, int64_t dim, const float* x,                \
                    const float* r, const float* gamma, const float* beta,    \
                    float eps, float* y);

namespace scalar {
ATTNLAB_KERNEL_SET
}  // namespace scalar

#if ATTNLAB_SIMD
namespace simd {
ATTNLAB_KERNEL_SET
}  // namespace simd
#endif

// Natively both kernel sets are built; tests switch to the scalar ones to
// compare. Returns the previous setting. No effect in the wasm scalar build.
bool UseScalarKernels(bool use_scalar);
bool UsingScalarKernels();

// The active kernel set.
int64_t GemmNr(int64_t n);
int64_t PackedFloats(int64_t k, int64_t n);
PackedB PackB(int64_t k, int64_t n, const float* src, int64_t sk, int64_t sn,
              float* out);
void Gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
          const PackedB& b, const float* bias, float* c, int64_t ldc);
void GemmT(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
           const float* w, int64_t ldw, const float* bias, float* c, int64_t ldc);
void GemvT(int64_t m, int64_t n, int64_t k, const float* x, int64_t ldx,
           const float* w, int64_t ldw, const float* bias, float* y,
           int64_t ldy);
int64_t HalfRowGroup();
void GemvTHalf(int64_t m, int64_t n, int64_t k, const float* x, int64_t ldx,
               const HalfMatrix& w, const float* bias, float* y, int64_t ldy);
void GemvPacked(int64_t m, int64_t n, int64_t k, const float* x, int64_t ldx,
                const PackedB& b, const float* bias, float* y, int64_t ldy);
int64_t QuantGemvScratchFloats(int64_t m, int64_t k);
void GemvQuant(int64_t m, int64_t n, int64_t k, const float* x, int64_t ldx,
               const QuantMatrix& w, const float* bias, float* y, int64_t ldy,
               float* scratch);
int64_t QuantGemmScratchFloats(int64_t k, int64_t n);
void GemmQuant(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
               const QuantMatrix& w, const float* bias, float* c, int64_t ldc,
               float* scratch);
void GeluTanh(int64_t n, const float* x, float* y);
void Gelu(int64_t n, const float* x, float* y);
void SwiGlu(int64_t n, const float* gate, const float* up, float* y);
void AttentionCore(const AttentionView& view, float* scratch);
void AddLayerNorm(int64_t rows, int64_t dim, const float* x, const float* r,
                  const float* gamma, const float* beta, float eps, float* y);

}  // namespace kernels
}  // namespace attnlab

#endif  // ATTNLAB_KERNELS_KERNELS_H_

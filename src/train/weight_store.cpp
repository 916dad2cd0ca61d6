// The weight store of the block graph (weight_store.h): registration,
// packed panels, writes from float32 and 16-bit rows, the flat copy and the
// finiteness check.
#include "train/weight_store.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

namespace attnlab {
namespace train {

int64_t Elements(const ParamInfo& info) {
  int64_t n = 1;
  for (int64_t d : info.shape) n *= d;
  return n;
}

void RowsCols(const ParamInfo& info, int64_t* r, int64_t* c) {
  *r = info.shape.size() == 2 ? info.shape[0] : 1;
  *c = info.shape.size() == 2 ? info.shape[1] : Elements(info);
}

int64_t WeightStore::Add(const std::string& name, std::vector<int64_t> shape, bool decay,
                         bool packed, bool table) {
  ParamInfo info;
  info.name = name;
  info.shape = std::move(shape);
  info.offset = count_;
  info.decay = decay;
  const int64_t n = Elements(info);
  if ((packed || table) && info.shape.size() == 2) {
    auto w = std::make_unique<PackedWeight>();
    w->out = info.shape[0];
    w->in = info.shape[1];
    w->table = !packed;
    float_offset_.push_back(-1);
    packed_index_.push_back(static_cast<int64_t>(packed_.size()));
    packed_.push_back(std::move(w));
    info.packed = packed;
  } else {
    float_offset_.push_back(stored_);
    packed_index_.push_back(-1);
    stored_ += n;
  }
  infos_.push_back(info);
  count_ += n;
  return static_cast<int64_t>(infos_.size()) - 1;
}

bool WeightStore::Allocate(int32_t half) {
  half_ = half;
  for (auto& w : packed_) {
    if (w->table) continue;
    const int64_t nr = kernels::GemmNr(w->out);
    w->pb = kernels::PackedB{nullptr, nr, w->in * nr};  // (no storage until written)
  }
  if (!params_.Reserve(std::max<int64_t>(stored_, 1))) return false;
  std::fill(params_.data(), params_.data() + stored_, 0.0f);
  return true;
}

Status WeightStore::EnsurePanels(int64_t i, PackedWeight* w) {
  const kernels::PackedB& b = w->pb;
  if (b.data != nullptr || b.half != nullptr) return Status::Ok();
  const std::string& name = infos_[static_cast<size_t>(i)].name;
  if (b.quant.data != nullptr) {
    return Status::Invalid("writeParam: " + name + " is held as " + kernels::QuantKindName(b.quant.kind) +
                           " blocks; write all its rows with writeParamQuant");
  }
  if (w->table) {  // plain rows of floats
    if (w->buf.data() != nullptr) return Status::Ok();
    if (!w->buf.Reserve(std::max<int64_t>(w->out * w->in, 1))) {
      std::ostringstream os;
      os << "writeParam: out of memory for " << name << " (" << w->out * w->in * 4 << " bytes)";
      return Status::OutOfMemory(os.str());
    }
    std::fill(w->buf.data(), w->buf.data() + w->out * w->in, 0.0f);
    return Status::Ok();
  }
  const int64_t n = kernels::PackedFloats(w->in, w->out);
  const int64_t nr = kernels::GemmNr(w->out);
  const int64_t floats = half_ != 0 ? (n + 1) / 2 : n;
  if (!w->buf.Reserve(floats)) {
    std::ostringstream os;
    os << "writeParam: out of memory for " << name << " (" << floats * 4 << " bytes)";
    return Status::OutOfMemory(os.str());
  }
  std::fill(w->buf.data(), w->buf.data() + floats, 0.0f);
  if (half_ != 0) {
    w->pb = kernels::PackedB{nullptr, nr, w->in * nr, reinterpret_cast<const uint16_t*>(w->buf.data()),
                             static_cast<kernels::HalfKind>(half_)};
  } else {
    w->pb = kernels::PackedB{w->buf.data(), nr, w->in * nr};
  }
  return Status::Ok();
}

bool WeightStore::EnableHeadCopy(int64_t embed, int32_t half) {
  const ParamInfo& info = infos_[static_cast<size_t>(embed)];
  const int64_t vocab = info.shape[0], e = info.shape[1];
  if (!head16_.Reserve((vocab * e + 1) / 2)) return false;
  head_param_ = embed;
  head16_w_ = kernels::HalfMatrix{reinterpret_cast<const uint16_t*>(head16_.data()), e,
                                  kernels::HalfRowGroup(), static_cast<kernels::HalfKind>(half)};
  head16_row_.assign(static_cast<size_t>(vocab), 0);
  return true;
}

float* WeightStore::Data(int64_t i) {
  if (i < 0) return nullptr;
  const int64_t off = float_offset_[static_cast<size_t>(i)];
  if (off >= 0) return params_.data() + off;
  const PackedWeight* w = PackedOf(i);
  return w->table && w->pb.quant.data == nullptr ? w->buf.data() : nullptr;
}

const kernels::PackedB* WeightStore::TableBlocks(int64_t i) const {
  const PackedWeight* w = PackedOf(i);
  return w != nullptr && w->table && w->pb.quant.data != nullptr ? &w->pb : nullptr;
}

void WeightStore::Row(int64_t i, int64_t r, float* out) const {
  const ParamInfo& info = infos_[static_cast<size_t>(i)];
  const int64_t c = info.shape.size() == 2 ? info.shape[1] : Elements(info);
  const PackedWeight* w = PackedOf(i);
  if (w != nullptr && w->pb.quant.data != nullptr) {
    kernels::DequantizeRow(w->pb.quant.kind, w->pb.quant.data + r * w->pb.quant.ld, c, out);
    return;
  }
  const float* d = Data(i);
  if (d == nullptr) {  // a row table never written
    std::fill(out, out + c, 0.0f);
    return;
  }
  std::memcpy(out, d + r * c, static_cast<size_t>(c) * sizeof(float));
}

const uint8_t* WeightStore::QuantBlocks(int64_t i, int64_t* bytes) const {
  const PackedWeight* w = PackedOf(i);
  if (w == nullptr || w->pb.quant.data == nullptr) {
    *bytes = 0;
    return nullptr;
  }
  *bytes = w->out * w->pb.quant.ld;
  return w->pb.quant.data;
}

int32_t WeightStore::QuantKindOf(int64_t i) const {
  const PackedWeight* w = PackedOf(i);
  return w != nullptr && w->pb.quant.data != nullptr ? static_cast<int32_t>(w->pb.quant.kind) : 0;
}

WeightStore::PackedWeight* WeightStore::PackedOf(int64_t i) const {
  if (i < 0) return nullptr;
  const int64_t j = packed_index_[static_cast<size_t>(i)];
  return j < 0 ? nullptr : packed_[static_cast<size_t>(j)].get();
}

const kernels::PackedB* WeightStore::Packed(int64_t i) const {
  const PackedWeight* w = PackedOf(i);
  return w && !w->table ? &w->pb : nullptr;
}

bool WeightStore::HeadCopyReady() const {
  return head16_w_.data != nullptr && head_param_ >= 0 &&
         head16_rows_ == infos_[static_cast<size_t>(head_param_)].shape[0];
}

void WeightStore::ForgetHeadRows(int64_t first, int64_t rows) {
  for (int64_t i = first; i < first + rows; ++i) {
    head16_rows_ -= head16_row_[static_cast<size_t>(i)];
    head16_row_[static_cast<size_t>(i)] = 0;
  }
}

void WeightStore::CopyAll(float* out) const {
  for (size_t i = 0; i < infos_.size(); ++i) {
    const ParamInfo& info = infos_[i];
    float* dst = out + info.offset;
    const PackedWeight* pw = PackedOf(static_cast<int64_t>(i));
    if (pw == nullptr) {
      std::memcpy(dst, params_.data() + float_offset_[i], static_cast<size_t>(Elements(info)) * sizeof(float));
      continue;
    }
    const PackedWeight& w = *pw;
    const kernels::PackedB& b = w.pb;
    if (b.quant.data != nullptr || w.table) {
      for (int64_t o = 0; o < w.out; ++o) Row(static_cast<int64_t>(i), o, dst + o * w.in);
      continue;
    }
    if (b.data == nullptr && b.half == nullptr) {  // never written
      std::fill(dst, dst + w.out * w.in, 0.0f);
      continue;
    }
    for (int64_t o = 0; o < w.out; ++o) {
      if (b.half != nullptr) {
        for (int64_t k = 0; k < w.in; ++k) dst[o * w.in + k] = kernels::HalfToFloat(b.half[kernels::HalfOffset(b, k, o)], b.kind);
        continue;
      }
      const float* col = b.data + (o / b.nr) * b.panel_stride + o % b.nr;
      for (int64_t k = 0; k < w.in; ++k) dst[o * w.in + k] = col[k * b.nr];
    }
  }
}

namespace {
// Write's argument checks (both source types).
Status CheckWrite(const std::vector<ParamInfo>& infos, int64_t index, int64_t first, int64_t rows,
                  const void* src, int64_t ld, bool transposed) {
  if (index < 0 || index >= static_cast<int64_t>(infos.size())) {
    return Status::Invalid("writeParam: no parameter " + std::to_string(index));
  }
  const ParamInfo& info = infos[static_cast<size_t>(index)];
  int64_t r = 0, c = 0;
  RowsCols(info, &r, &c);
  const int64_t lim = transposed ? c : r, width = transposed ? r : c;
  if (first < 0 || rows < 0 || first + rows > lim || ld < width || (rows > 0 && src == nullptr)) {
    std::ostringstream os;
    os << "writeParam: rows [" << first << ", " << first + rows << ") of " << info.name
       << " do not fit its " << lim << " rows of " << width << " (ld " << ld << ")";
    return Status::Invalid(os.str());
  }
  return Status::Ok();
}
}  // namespace

Status WeightStore::WriteHalf(int64_t index, int64_t first, int64_t rows, const uint16_t* src,
                              int64_t ld, bool transposed, int32_t kind) {
  Status s = CheckWrite(infos_, index, first, rows, src, ld, transposed);
  if (!s.ok()) return s;
  if (kind != 1 && kind != 2) return Status::Invalid("writeParamHalf: kind must be 1 (F16) or 2 (BF16), got " + std::to_string(kind));
  const auto hk = static_cast<kernels::HalfKind>(kind);
  const ParamInfo& info = infos_[static_cast<size_t>(index)];
  int64_t r = 0, c = 0;
  RowsCols(info, &r, &c);
  const int64_t width = transposed ? r : c;
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < width; ++j) {
      if (!kernels::IsHalfFinite(src[i * ld + j], hk)) {
        const int64_t e = transposed ? j * c + first + i : (first + i) * c + j;
        std::ostringstream os;
        os << "weights must be finite: " << info.name << " element " << e << " is "
           << ((src[i * ld + j] & (hk == kernels::HalfKind::kF16 ? 0x3ffu : 0x7fu)) ? "NaN" : "Inf");
        return Status::Invalid(os.str());
      }
    }
  }
  if (PackedWeight* pw = PackedOf(index)) {
    if (!(s = EnsurePanels(index, pw)).ok()) return s;
  }
  const kernels::PackedB* pb = Packed(index);
  if (pb == nullptr || pb->half == nullptr || pb->kind != hk) {
    // Stored as float32: convert a row at a time through Write.
    std::vector<float> row(static_cast<size_t>(width));
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < width; ++j) row[static_cast<size_t>(j)] = kernels::HalfToFloat(src[i * ld + j], hk);
      s = Write(index, first + i, 1, row.data(), width, transposed);
      if (!s.ok()) return s;
    }
    if (index == head_param_ && !transposed && head16_w_.data != nullptr && head16_w_.kind == hk) {
      uint16_t* head = const_cast<uint16_t*>(head16_w_.data);
      for (int64_t i = 0; i < rows; ++i) {
        uint16_t* dst = head + (first + i) * head16_w_.ld;
        for (int64_t j = 0; j < c; ++j) dst[kernels::HalfRowOffset(head16_w_, j)] = src[i * ld + j];
        uint8_t& done = head16_row_[static_cast<size_t>(first + i)];
        head16_rows_ += 1 - done;
        done = 1;
      }
    }
    return Status::Ok();
  }
  uint16_t* data = const_cast<uint16_t*>(pb->half);
  for (int64_t i = 0; i < rows; ++i) {
    const uint16_t* row = src + i * ld;
    if (!transposed) {
      const int64_t n = first + i;  // a row of W: column n of B
      for (int64_t k = 0; k < c; ++k) data[kernels::HalfOffset(*pb, k, n)] = row[k];
    } else {
      const int64_t k = first + i;  // a row of B
      for (int64_t n = 0; n < r; ++n) data[kernels::HalfOffset(*pb, k, n)] = row[n];
    }
  }
  return Status::Ok();
}

Status WeightStore::Write(int64_t index, int64_t first, int64_t rows, const float* src,
                          int64_t ld, bool transposed) {
  Status st = CheckWrite(infos_, index, first, rows, src, ld, transposed);
  if (!st.ok()) return st;
  const ParamInfo& info = infos_[static_cast<size_t>(index)];
  int64_t r = 0, c = 0;
  RowsCols(info, &r, &c);
  if (PackedWeight* pw = PackedOf(index)) {
    if (!(st = EnsurePanels(index, pw)).ok()) return st;
  }
  const kernels::PackedB* pb = Packed(index);
  if (pb != nullptr && pb->half != nullptr) {
    return Status::Invalid("writeParam: " + info.name + " is held in 16 bits (packed_half); write it with writeParamHalf");
  }
  if (index == head_param_ && head16_w_.data != nullptr) {
    if (transposed) {
      ForgetHeadRows(0, r);
    } else {
      ForgetHeadRows(first, rows);
    }
  }
  if (pb == nullptr) {
    float* dst = Data(index);
    for (int64_t i = 0; i < rows; ++i) {
      const float* row = src + i * ld;
      if (!transposed) {
        std::memcpy(dst + (first + i) * c, row, static_cast<size_t>(c) * sizeof(float));
      } else {
        for (int64_t j = 0; j < r; ++j) dst[j * c + first + i] = row[j];  // W[j][first + i]
      }
    }
    return Status::Ok();
  }
  // Packed: W [out, in] is B [k = in, n = out], B(k, n) at
  // data[(n / nr)·stride + k·nr + n % nr].
  const kernels::PackedB& b = *pb;
  float* data = const_cast<float*>(b.data);
  for (int64_t i = 0; i < rows; ++i) {
    const float* row = src + i * ld;
    if (!transposed) {
      const int64_t n = first + i;  // a row of W: column n of B
      float* col = data + (n / b.nr) * b.panel_stride + n % b.nr;
      for (int64_t k = 0; k < c; ++k) col[k * b.nr] = row[k];
    } else {
      const int64_t k = first + i;  // a row of B
      for (int64_t n = 0; n < r; ++n) data[(n / b.nr) * b.panel_stride + k * b.nr + n % b.nr] = row[n];
    }
  }
  return Status::Ok();
}

void WeightStore::WriteAll(const float* data) {
  if (packed_.empty()) {
    std::memcpy(params_.data(), data, static_cast<size_t>(count_) * sizeof(float));
    return;
  }
  for (size_t i = 0; i < infos_.size(); ++i) {
    const ParamInfo& info = infos_[i];
    int64_t r = 0, c = 0;
    RowsCols(info, &r, &c);
    (void)Write(static_cast<int64_t>(i), 0, r, data + info.offset, c, false);
  }
}

Status WeightStore::CheckFinite() const {
  for (size_t i = 0; i < infos_.size(); ++i) {
    const ParamInfo& info = infos_[i];
    const PackedWeight* pw = PackedOf(static_cast<int64_t>(i));
    int64_t bad = -1;
    float value = 0.0f;
    if (pw == nullptr) {
      const float* p = params_.data() + float_offset_[i];
      for (int64_t j = 0, n = Elements(info); j < n && bad < 0; ++j) {
        if (!std::isfinite(p[j])) bad = j, value = p[j];
      }
    } else if (pw->table && pw->pb.quant.data == nullptr && pw->buf.data() != nullptr) {
      const float* p = pw->buf.data();
      for (int64_t j = 0, n = Elements(info); j < n && bad < 0; ++j) {
        if (!std::isfinite(p[j])) bad = j, value = p[j];
      }
    } else if (!pw->table && pw->pb.data != nullptr) {  // (16-bit and blocks: checked as written)
      const PackedWeight& w = *pw;
      for (int64_t o = 0; o < w.out && bad < 0; ++o) {
        const float* col = w.pb.data + (o / w.pb.nr) * w.pb.panel_stride + o % w.pb.nr;
        for (int64_t k = 0; k < w.in; ++k) {
          if (!std::isfinite(col[k * w.pb.nr])) {
            bad = o * w.in + k, value = col[k * w.pb.nr];
            break;
          }
        }
      }
    }
    if (bad >= 0) {
      std::ostringstream os;
      os << "weights must be finite: " << info.name << " element " << bad << " is " << value;
      return Status::Invalid(os.str());
    }
  }
  return Status::Ok();
}

Status WeightStore::WriteQuant(int64_t index, int64_t first, int64_t rows, int32_t kind,
                               const uint8_t* src, int64_t bytes) {
  const char* where = "writeParamQuant";
  if (index < 0 || index >= static_cast<int64_t>(infos_.size())) {
    return Status::Invalid(std::string(where) + ": no parameter " + std::to_string(index));
  }
  const ParamInfo& info = infos_[static_cast<size_t>(index)];
  if (!kernels::IsQuantKind(kind)) {
    return Status::Invalid(std::string(where) + ": kind must be 8 (Q8_0), 2 (Q4_0), 12 (Q4_K) or 14 (Q6_K), the ggml type ids, got " +
                           std::to_string(kind));
  }
  const auto qk = static_cast<kernels::QuantKind>(kind);
  int64_t r = 0, c = 0;
  RowsCols(info, &r, &c);
  std::ostringstream os;
  os << where << ": ";
  const int64_t bv = kernels::QuantBlockValues(qk);
  if (c % bv != 0) {
    os << info.name << " has rows of " << c << " values, not a multiple of " << bv
       << " (a " << kernels::QuantKindName(qk) << " block)";
    return Status::Invalid(os.str());
  }
  const int64_t row_bytes = c / bv * kernels::QuantBlockBytes(qk);
  if (first < 0 || rows < 0 || first + rows > r) {
    os << "rows [" << first << ", " << first + rows << ") do not fit the " << r << " rows of " << info.name;
    return Status::Invalid(os.str());
  }
  if (bytes != rows * row_bytes || (rows > 0 && src == nullptr)) {
    os << rows << " rows of " << info.name << " as " << kernels::QuantKindName(qk) << " are " << rows * row_bytes
       << " bytes (" << c / bv << " blocks of " << kernels::QuantBlockBytes(qk)
       << " a row), got " << bytes;
    return Status::Invalid(os.str());
  }
  const int64_t bb = kernels::QuantBlockBytes(qk);
  for (int64_t p = 0; p < bytes; p += bb) {
    if (!kernels::QuantScalesFinite(qk, src + p)) {
      os << "weights must be finite: ";
      if (bv == kernels::kQuantBlock) {
        const uint16_t d = kernels::QuantScaleBits(src + p);
        os << "the scale of block " << (first * row_bytes + p) / bb << " of " << info.name << " is "
           << ((d & 0x3ffu) ? "NaN" : "Inf");
      } else {
        os << "a scale (d or dmin) of super-block " << (first * row_bytes + p) / bb << " of " << info.name
           << " is Inf or NaN";
      }
      return Status::Invalid(os.str());
    }
  }
  PackedWeight* pw = PackedOf(index);
  // A row table already holding float rows takes blocks only for all its rows.
  const bool table_floats = pw != nullptr && pw->table && pw->pb.quant.data == nullptr && pw->buf.data() != nullptr &&
                            !(first == 0 && rows == r);
  if (pw == nullptr || table_floats) {  // held as floats: dequantized
    std::vector<float> row(static_cast<size_t>(c));
    for (int64_t i = 0; i < rows; ++i) {
      kernels::DequantizeRow(qk, src + i * row_bytes, c, row.data());
      Status s = Write(index, first + i, 1, row.data(), c, false);
      if (!s.ok()) return s;
    }
    return Status::Ok();
  }
  kernels::PackedB& b = pw->pb;
  if (first == 0 && rows == r && (b.data != nullptr || b.half != nullptr || b.quant.kind != qk || pw->buf.data() != nullptr)) {
    // The whole projection: whatever it held before gives way to the blocks.
    pw->buf.Release();
    b = kernels::PackedB{};
  }
  if (b.data != nullptr || b.half != nullptr) {
    os << info.name << " already holds rows of " << (b.half ? "16-bit" : "float32")
       << " values (writeParam/writeParamHalf); all rows of a projection must be of one kind (or write all its rows at once)";
    return Status::Invalid(os.str());
  }
  if (b.quant.data != nullptr && b.quant.kind != qk) {
    os << info.name << " already holds " << kernels::QuantKindName(b.quant.kind) << " rows, got "
       << kernels::QuantKindName(qk) << "; all rows of a projection must be of one kind (or write all its rows at once)";
    return Status::Invalid(os.str());
  }
  if (b.quant.data == nullptr) {
    const int64_t total = r * row_bytes;
    if (!pw->buf.Reserve((total + 3) / 4)) {
      os << "out of memory for " << info.name << " (" << total << " bytes of " << kernels::QuantKindName(qk) << ")";
      return Status::OutOfMemory(os.str());
    }
    // Zero blocks (d = 0) for rows not written yet: zero weights, as panels.
    std::memset(pw->buf.data(), 0, static_cast<size_t>(total));
    b = kernels::PackedB{};
    b.quant = kernels::QuantMatrix{reinterpret_cast<const uint8_t*>(pw->buf.data()), row_bytes, qk};
  }
  std::memcpy(const_cast<uint8_t*>(b.quant.data) + first * row_bytes, src, static_cast<size_t>(bytes));
  return Status::Ok();
}

bool WeightStore::HasQuant() const {
  for (const auto& w : packed_) {
    if (w->pb.quant.data != nullptr) return true;
  }
  return false;
}

int64_t WeightStore::Bytes() const {
  int64_t b = params_.bytes() + head16_.bytes();
  for (const auto& w : packed_) b += w->buf.bytes();
  return b;
}

}  // namespace train
}  // namespace attnlab

// libFuzzer target for the C++ core: validation and kernels under arbitrary
// shapes, masks, weights and data.
//
//   build: scripts/fuzz.sh (clang, -fsanitize=fuzzer,address,undefined)
//   run:   build/fuzz/fuzz_attention [corpus dirs] (see scripts/fuzz.sh)
//
// The input is read front to back as a small program (see Reader): one op
// byte, then sizes, flags and data. Each size is usually small (1..8) and now
// and then one of a table of edge values (0, negative, 2^28 ± 1, 2^40,
// INT64_MAX, ...). For every call the harness decides from the documented
// contract (attention_lab.h, docs/js-api.md) what must happen:
//
//   * must refuse — a size < 1, a tensor over kMaxBufferBytes / 4 elements
//     (or whose element count overflows), a mask that does not broadcast, a
//     padding length outside [0, Lk], an unknown mask kind or weight id, a
//     bias on a bias-free layer, a non-finite scale, ...: the call gets small
//     sentinel-filled buffers and must return an error without touching them
//     (a crash here means it read or wrote through a buffer it had no right to);
//   * valid and small — real buffers of the exact size (ASan catches any byte
//     past them); the call must succeed. With tame data (bounded, finite) the
//     results must be finite, weights in [0, 1] with rows summing to 1, and the
//     SIMD kernels must agree with the scalar ones;
//   * valid but too large to run here — skipped.
//
// A violated expectation prints what was called and traps (a libFuzzer crash).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "attention_lab.h"
#include "kernels/kernels.h"

namespace {

using attnlab::MaskKind;
using attnlab::MaskSpec;
using attnlab::Status;
using attnlab::WeightId;
using attnlab::WeightLayout;

constexpr int64_t kMaxElements = attnlab::kMaxBufferBytes / 4;  // 2^28
// Largest tensor the harness allocates for a real run (floats), and the most
// multiply-adds of one attention call it runs (keeps each input ~1 ms).
constexpr int64_t kRunCap = int64_t{1} << 15;
constexpr int64_t kWorkCap = int64_t{1} << 20;
constexpr float kSentinel = 12345.678f;
const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

[[noreturn]] void Fail(const char* what, const char* detail = "") {
  std::fprintf(stderr, "fuzz_attention: %s %s\n", what, detail);
  std::fflush(stderr);
  __builtin_trap();
}

#define CHECK(cond, what)                                                \
  do {                                                                   \
    if (!(cond)) Fail("check failed:", #cond " — " what);                \
  } while (0)

// Reads the fuzz input front to back; past the end every read gives 0.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : p_(data), n_(size) {}
  uint8_t U8() { return i_ < n_ ? p_[i_++] : 0; }
  uint32_t U32() {
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) v = (v << 8) | U8();
    return v;
  }
  bool Bool() { return (U8() & 1) != 0; }
  float RawFloat() {
    const uint32_t bits = U32();
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  }
  // A size: mostly 1..8, sometimes an edge value.
  int64_t Dim() {
    static const int64_t kEdges[] = {
        0, -1, -7, 9, 12, 16, 31, 64, 100, 255, int64_t{1} << 10, int64_t{1} << 14,
        int64_t{1} << 16, int64_t{1} << 20, int64_t{1} << 26, kMaxElements, kMaxElements + 1,
        int64_t{1} << 30, int64_t{1} << 31, int64_t{1} << 32, int64_t{1} << 40, int64_t{1} << 62,
        std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(),
        -(int64_t{1} << 40), 3, 5, 7, 2, 4, 6, 8};
    const uint8_t b = U8();
    if (b < 224) return 1 + b % 8;
    return kEdges[b - 224];
  }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t i_ = 0;
};

// Element count of a tensor, or -1 when a dim is < 1, it overflows or it is
// larger than kMaxElements (the contract: such a call must be refused).
int64_t Count(std::initializer_list<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 1) return -1;
    if (n > kMaxElements / d) return -1;
    n *= d;
  }
  return n;
}

bool AllFinite(const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) return false;
  }
  return true;
}

float MaxAbs(const float* x, int64_t n) {
  float m = 0.0f;
  for (int64_t i = 0; i < n; ++i) m = std::fmax(m, std::fabs(x[i]));
  return m;
}
float MaxAbs(const std::vector<float>& v) { return MaxAbs(v.data(), static_cast<int64_t>(v.size())); }

// Tolerances of the SIMD-vs-scalar comparison from a bound S on |score|: the
// two kernel sets sum in different orders, so scores differ by ~1e-7·terms·S
// and softmax weights by about twice that. Returns false when S is too large
// for a meaningful comparison (weights of near-tied huge scores may differ a
// lot), or when a block mask could round -1e9 + s differently (|s| >= 32).
struct Tolerance {
  float weights = 0.0f;
  float output = 0.0f;
};
bool CompareTolerance(double score_bound, double terms, double value_bound, bool block_mask,
                      Tolerance* t) {
  if (!(score_bound <= 64.0) || (block_mask && !(score_bound < 32.0))) return false;
  t->weights = static_cast<float>(1e-4 + 1e-6 * terms * score_bound);
  t->output = static_cast<float>(1e-4 + (4.0 * t->weights + 1e-6 * terms) * value_bound);
  return true;
}

bool Untouched(const std::vector<float>& v) {
  for (float x : v) {
    if (!(x == kSentinel)) return false;
  }
  return true;
}

// Fills `v` from the input. Returns true when the data is "tame": finite and
// bounded (|x| <= 2), so results must be finite and kernels must agree.
bool Fill(Reader& r, std::vector<float>& v) {
  const uint8_t mode = r.U8() % 4;
  switch (mode) {
    case 0:  // bounded values, one byte each
      for (float& x : v) x = static_cast<float>(static_cast<int8_t>(r.U8())) / 64.0f;
      return true;
    case 1: {  // a constant
      const float c = static_cast<float>(static_cast<int8_t>(r.U8())) / 64.0f;
      for (float& x : v) x = c;
      return true;
    }
    case 2:  // raw float bit patterns (NaN, Inf, denormals, 1e38, ...)
      for (float& x : v) x = r.RawFloat();
      return AllFinite(v.data(), static_cast<int64_t>(v.size())) && [&] {
        for (float x : v) if (std::fabs(x) > 2.0f) return false;
        return true;
      }();
    default: {  // bounded, with a few special values planted
      static const float kSpecials[] = {kNaN, kInf, -kInf, -0.0f, 1e30f, -1e30f, 1e-40f, 3.4e38f};
      for (float& x : v) x = static_cast<float>(static_cast<int8_t>(r.U8())) / 64.0f;
      const int plants = r.U8() % 4;
      for (int k = 0; k < plants && !v.empty(); ++k) {
        v[r.U32() % v.size()] = kSpecials[r.U8() % 8];
      }
      return AllFinite(v.data(), static_cast<int64_t>(v.size())) && [&] {
        for (float x : v) if (std::fabs(x) > 2.0f) return false;
        return true;
      }();
    }
  }
}

// |a - b| <= abs + rel·|b| elementwise, NaN only where both are NaN.
bool Agree(const float* a, const float* b, int64_t n, float abs_tol, float rel_tol) {
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) {
      if (std::isnan(a[i]) != std::isnan(b[i])) return false;
      continue;
    }
    if (!(std::fabs(a[i] - b[i]) <= abs_tol + rel_tol * std::fabs(b[i]))) return false;
  }
  return true;
}

// Attention weights: in [0, 1], each row of `lk` sums to 1.
void CheckWeights(const float* w, int64_t rows, int64_t lk) {
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t j = 0; j < lk; ++j) {
      const float x = w[r * lk + j];
      if (!(x >= 0.0f && x <= 1.0f + 1e-5f)) Fail("weight outside [0, 1]");
      sum += x;
    }
    if (!(std::fabs(sum - 1.0) <= 1e-3)) Fail("weights row does not sum to 1");
  }
}

// Runs `fn` with the scalar kernels, restoring the SIMD ones after.
template <class Fn>
void WithScalarKernels(Fn fn) {
  const bool previous = attnlab::kernels::UseScalarKernels(true);
  fn();
  attnlab::kernels::UseScalarKernels(previous);
}

// ---------------------------------------------------------------------------
// Masks

struct MaskPlan {
  MaskSpec spec;
  bool block = false;  // a block mask: -1e9 is added to the scores
  bool compare = true;  // SIMD and scalar results are comparable
  bool too_big = false;  // a valid mask tensor too large to allocate here: skip
  bool valid = true;   // must be accepted (as far as the mask goes)
  bool tame = true;    // cannot make results non-finite
  std::vector<int32_t> lengths;
  std::vector<float> data;
};

// Builds a mask over scores [B, H, Lq, Lk]. `small`: the dims are small enough
// to allocate lengths and mask data for them.
void PlanMask(Reader& r, int64_t b, int64_t h, int64_t lq, int64_t lk, bool small, MaskPlan* m) {
  const uint8_t flags = r.U8();
  m->spec.causal = (flags & 1) != 0;
  if (flags & 2) {
    if (small) {
      m->lengths.resize(static_cast<size_t>(b));
      for (auto& len : m->lengths) {
        const uint8_t x = r.U8();
        static const int32_t kBad[] = {-1, -2, std::numeric_limits<int32_t>::min(),
                                       std::numeric_limits<int32_t>::max()};
        if (x < 240) {
          len = static_cast<int32_t>(x % (lk + 1));
        } else if (x < 248) {
          len = static_cast<int32_t>(lk + 1 + x % 8);
        } else {
          len = kBad[x % 4];
        }
        if (len < 0 || len > lk) m->valid = false;
      }
    } else {
      m->lengths.assign(1, 0);
    }
    m->spec.lengths = m->lengths.data();
  }
  const int kind = (flags >> 2) & 7;  // 0 none, 1 keep, 2 block, 3 additive, 4+ invalid
  if (kind == 0) return;
  if (kind >= 4) {
    m->spec.kind = static_cast<MaskKind>(kind == 7 ? -1 : kind);
    m->data.assign(1, 0.0f);
    m->spec.data = m->data.data();
    m->valid = false;
    return;
  }
  m->spec.kind = static_cast<MaskKind>(kind);
  m->block = kind == 2;
  const int64_t full[4] = {b, h, lq, lk};
  int64_t count = 1;
  bool shape_ok = true;
  for (int d = 0; d < 4; ++d) {
    const uint8_t c = r.U8() % 4;
    const int64_t md = c == 0 ? 1 : c <= 2 ? full[d] : r.Dim();
    m->spec.shape[d] = md;
    if (md != 1 && md != full[d]) shape_ok = false;
    if (md >= 1 && count <= kRunCap) count = md > kRunCap ? kRunCap + 1 : count * md;
  }
  if (!shape_ok) m->valid = false;
  if (shape_ok && small && count <= kRunCap) {
    m->data.resize(static_cast<size_t>(count));
    // 0: 0/1 values (as the tutorials use them); 1: 0/1 for keep/block, a
    // tame set with -inf for additive; 2: wild values (NaN, ±inf, ±1e30);
    // 3: small values in [-8, 8).
    const uint8_t mode = r.U8() % 4;
    static const float kAdd[] = {0.0f, -1.0f, 1.0f, -2.5f, -kInf, 0.5f, -kInf, 0.0f};
    static const float kWild[] = {kNaN, kInf, -kInf, 1e30f, -1e30f, -1e9f, 0.0f, 3.0f};
    for (auto& x : m->data) {
      const uint8_t v = r.U8();
      switch (mode) {
        case 0: x = static_cast<float>(v & 1); break;
        case 1: x = kind == 3 ? kAdd[v % 8] : static_cast<float>(v & 1); break;
        case 2: x = kWild[v % 8]; break;
        default: x = static_cast<float>(static_cast<int8_t>(v)) / 16.0f; break;
      }
    }
    // keep only compares with 0, so any value is tame there.
    if (mode == 2 && kind != 1) m->tame = false;
    // block · -1e9 with values other than 0/1: scores ~1e8 keep only a few
    // bits of the dot product, so the two kernel sets may round differently.
    if (mode == 3 && kind == 2) m->compare = false;
  } else {
    if (shape_ok) m->too_big = true;
    m->data.assign(1, 0.0f);
  }
  m->spec.data = m->data.data();
}

// ---------------------------------------------------------------------------
// Ops

void FuzzPositionalEncoding(Reader& r) {
  const int64_t len = r.Dim(), dim = r.Dim();
  static const double kBases[] = {10000.0, 2.0, 1.0, 0.5, -3.0, 1e300, std::nan(""), HUGE_VAL};
  const uint8_t bsel = r.U8();
  const double base = bsel < 128 ? 1.0 + 1.0 / 16 + (bsel % 64) * 1000.0 : kBases[bsel % 8];
  const bool base_ok = base > 1.0 && std::isfinite(base);
  const int64_t n = Count({len, dim});
  if (n < 0 || !base_ok) {
    std::vector<float> out(4, kSentinel);
    const Status s = attnlab::PositionalEncoding(len, dim, base, out.data());
    CHECK(!s.ok(), "PositionalEncoding accepted an invalid size or base");
    CHECK(!s.message.empty(), "error without a message");
    CHECK(Untouched(out), "PositionalEncoding wrote to its output on error");
    return;
  }
  if (n > kRunCap) return;
  std::vector<float> out(static_cast<size_t>(n), kSentinel);
  const Status s = attnlab::PositionalEncoding(len, dim, base, out.data());
  CHECK(s.ok(), "PositionalEncoding refused valid arguments");
  for (float x : out) CHECK(std::isfinite(x) && std::fabs(x) <= 1.0f, "PE value outside [-1, 1]");
}

void FuzzSdpa(Reader& r) {
  attnlab::SdpaArgs a;
  a.batch = r.Dim();
  a.heads = r.Dim();
  a.lq = r.Dim();
  a.lk = r.Dim();
  a.d = r.Dim();
  a.dv = r.Dim();
  const uint8_t flags = r.U8();
  const bool want_weights = (flags & 1) != 0;
  bool scale_ok = true, scale_tame = true;
  if (flags & 2) {
    a.has_scale = true;
    static const float kScales[] = {kNaN, kInf, -kInf, 1e30f, 0.0f, -1.0f, 1e-30f, 3.4e38f};
    const uint8_t s = r.U8();
    a.scale = s < 200 ? static_cast<float>(static_cast<int>(s % 64) - 32) / 8.0f : kScales[s % 8];
    scale_ok = std::isfinite(a.scale);
    scale_tame = std::fabs(a.scale) <= 16.0f;
  }
  const int64_t nq = Count({a.batch, a.heads, a.lq, a.d});
  const int64_t nk = Count({a.batch, a.heads, a.lk, a.d});
  const int64_t nv = Count({a.batch, a.heads, a.lk, a.dv});
  const int64_t no = Count({a.batch, a.heads, a.lq, a.dv});
  const int64_t nw = want_weights ? Count({a.batch, a.heads, a.lq, a.lk}) : 0;
  const bool sizes_ok = nq > 0 && nk > 0 && nv > 0 && no > 0 && nw >= 0;
  const bool small = sizes_ok && nq <= kRunCap && nk <= kRunCap && nv <= kRunCap &&
                     no <= kRunCap && nw <= kRunCap &&
                     Count({a.batch, a.heads, a.lq, a.lk}) > 0 &&
                     Count({a.batch, a.heads, a.lq, a.lk}) * (a.d + a.dv) <= kWorkCap;
  MaskPlan mask;
  PlanMask(r, small ? a.batch : 1, small ? a.heads : 1, small ? a.lq : 1, small ? a.lk : 1, small, &mask);
  if (!small) {
    // Edge sizes: re-plan the mask shape against the real dims is not needed,
    // the size checks come first. Sentinel buffers only.
    if (sizes_ok) return;  // valid but too large to run here
    std::vector<float> q(2, kSentinel), k(2, kSentinel), v(2, kSentinel), out(2, kSentinel),
        w(2, kSentinel);
    a.q = q.data();
    a.k = k.data();
    a.v = v.data();
    a.output = out.data();
    a.weights = want_weights ? w.data() : nullptr;
    a.mask = mask.spec;
    const Status s = attnlab::ScaledDotProductAttention(a);
    CHECK(!s.ok(), "ScaledDotProductAttention accepted an invalid or oversized shape");
    CHECK(Untouched(out) && Untouched(w), "ScaledDotProductAttention wrote on error");
    return;
  }
  if (mask.too_big) return;
  std::vector<float> q(static_cast<size_t>(nq)), k(static_cast<size_t>(nk)), v(static_cast<size_t>(nv));
  bool tame = Fill(r, q);
  tame = Fill(r, k) && tame;
  tame = Fill(r, v) && tame;
  std::vector<float> out(static_cast<size_t>(no), kSentinel), w(static_cast<size_t>(nw), kSentinel);
  a.q = q.data();
  a.k = k.data();
  a.v = v.data();
  a.output = out.data();
  a.weights = want_weights ? w.data() : nullptr;
  a.mask = mask.spec;
  const Status s = attnlab::ScaledDotProductAttention(a);
  const bool valid = mask.valid && scale_ok;
  if (!valid) {
    CHECK(!s.ok(), "ScaledDotProductAttention accepted an invalid mask or scale");
    CHECK(Untouched(out) && Untouched(w), "ScaledDotProductAttention wrote on error");
    return;
  }
  if (!s.ok()) Fail("ScaledDotProductAttention refused valid arguments:", s.message.c_str());
  if (!(tame && mask.tame && scale_tame)) return;
  CHECK(AllFinite(out.data(), no), "non-finite output from finite inputs");
  if (want_weights) CheckWeights(w.data(), nw / a.lk, a.lk);
  const double scale = a.has_scale ? a.scale : 1.0 / std::sqrt(static_cast<double>(a.d));
  const double bound = static_cast<double>(MaxAbs(q)) * MaxAbs(k) * static_cast<double>(a.d) * std::fabs(scale);
  Tolerance tol;
  if (!mask.compare || !CompareTolerance(bound, static_cast<double>(a.d), MaxAbs(v), mask.block, &tol)) return;
  std::vector<float> out2(static_cast<size_t>(no), kSentinel), w2(static_cast<size_t>(nw), kSentinel);
  a.output = out2.data();
  a.weights = want_weights ? w2.data() : nullptr;
  WithScalarKernels([&] { CHECK(attnlab::ScaledDotProductAttention(a).ok(), "scalar run failed"); });
  CHECK(Agree(out.data(), out2.data(), no, tol.output, 1e-4f), "SIMD and scalar outputs differ");
  if (want_weights) CHECK(Agree(w.data(), w2.data(), nw, tol.weights, 0.0f), "SIMD and scalar weights differ");
}

// Bounds of one MHA forward, from the weights (read back) and the inputs:
// |Q|, |K|, |V| entries and the score bound S = |Q|·|K|·D·scale.
struct MhaBounds {
  double score = 0, terms = 0, out_value = 0;
};
MhaBounds Bounds(attnlab::MultiHeadAttention& m, float qmax, float kmax, float vmax) {
  const attnlab::MhaConfig& c = m.config();
  float wmax[8] = {0};
  for (int id = 0; id < 8; ++id) {
    std::vector<float> w(static_cast<size_t>(m.WeightSize(static_cast<WeightId>(id))));
    if (!w.empty()) {
      CHECK(m.GetWeight(static_cast<WeightId>(id), WeightLayout::kKeras, w.data()).ok(), "GetWeight");
      wmax[id] = MaxAbs(w);
    }
  }
  const double e = static_cast<double>(c.embed_dim), d = e / static_cast<double>(c.num_heads);
  const double qb = e * qmax * wmax[0] + wmax[1];
  const double kb = static_cast<double>(c.kdim) * kmax * wmax[2] + wmax[3];
  const double vb = static_cast<double>(c.vdim) * vmax * wmax[4] + wmax[5];
  MhaBounds b;
  b.score = qb * kb * d / std::sqrt(d);
  b.terms = e + static_cast<double>(std::max(c.kdim, c.vdim)) + d;
  b.out_value = vb * e * wmax[6] + wmax[7];
  return b;
}

// A config for MultiHeadAttention / SelfAttentionLayer. Returns false when the
// contract requires Create to refuse it.
struct MhaPlan {
  attnlab::MhaConfig config;
  bool valid = true;
  bool small = true;  // cheap enough to create here
};

MhaPlan PlanMha(Reader& r) {
  MhaPlan p;
  const uint8_t sel = r.U8();
  int64_t h = r.Dim();
  // Usually a multiple of numHeads, sometimes anything.
  int64_t e = (sel & 3) != 0 && h >= 1 && h <= 64 ? h * (1 + r.U8() % 4) : r.Dim();
  p.config.embed_dim = e;
  p.config.num_heads = h;
  p.config.kdim = (sel & 4) ? r.Dim() : 0;
  p.config.vdim = (sel & 8) ? r.Dim() : 0;
  p.config.bias = (sel & 16) == 0;
  p.config.seed = r.U32();
  const int64_t kd = p.config.kdim == 0 ? e : p.config.kdim;
  const int64_t vd = p.config.vdim == 0 ? e : p.config.vdim;
  if (e < 1 || h < 1 || kd < 1 || vd < 1 || e % h != 0) {
    p.valid = false;
    return p;
  }
  const int64_t widest = std::max(e, std::max(kd, vd));
  // A projection weight [widest, 3E] over kMaxElements must be refused.
  if (Count({widest, 3, e}) < 0) p.valid = false;
  // Weights take ~4 copies of E·(2E + kdim + vdim) floats: run small ones only.
  if (!p.valid || e > 64 || kd > 64 || vd > 64) p.small = false;
  return p;
}

template <class T>
void ExpectRefused(const char* what, const T& object, const Status& s) {
  if (object != nullptr) Fail(what, "Create accepted an invalid config");
  if (s.ok() || s.message.empty()) Fail(what, "Create failed without an error message");
}

// setWeight / getWeight with ids, layouts and data from the input.
bool FuzzWeights(Reader& r, attnlab::MultiHeadAttention& m) {
  bool tame = true;
  const int rounds = r.U8() % 4;
  for (int i = 0; i < rounds; ++i) {
    const uint8_t sel = r.U8();
    int id = sel & 7;
    if (sel & 128) id = (sel & 8) ? 8 : -1;  // unknown ids
    const WeightLayout layout = (sel & 16) ? WeightLayout::kKeras : WeightLayout::kTorch;
    if (id < 0 || id > 7) {
      std::vector<float> buf(4, kSentinel);
      CHECK(!m.SetWeight(static_cast<WeightId>(id), buf.data(), layout).ok(), "SetWeight accepted an unknown id");
      CHECK(!m.GetWeight(static_cast<WeightId>(id), layout, buf.data()).ok(), "GetWeight accepted an unknown id");
      CHECK(Untouched(buf), "GetWeight wrote on error");
      continue;
    }
    const WeightId wid = static_cast<WeightId>(id);
    const int64_t n = m.WeightSize(wid);
    const bool is_bias = id % 2 == 1;
    if (is_bias && !m.config().bias) {
      std::vector<float> buf(4, kSentinel);
      CHECK(n == 0, "a bias-free layer reports a bias size");
      CHECK(!m.SetWeight(wid, buf.data(), layout).ok(), "SetWeight accepted a bias on a bias-free layer");
      continue;
    }
    std::vector<float> data(static_cast<size_t>(n));
    if (sel & 32) {
      tame = Fill(r, data) && tame;
      if (!m.SetWeight(wid, data.data(), layout).ok()) Fail("SetWeight refused a valid weight");
      if (sel & 64) {
        CHECK(!m.SetWeight(wid, nullptr, layout).ok(), "SetWeight accepted null data");
      }
    }
    std::vector<float> back(static_cast<size_t>(n), kSentinel);
    if (!m.GetWeight(wid, layout, back.data()).ok()) Fail("GetWeight failed");
    if (sel & 32) {
      CHECK(std::memcmp(back.data(), data.data(), static_cast<size_t>(n) * sizeof(float)) == 0,
            "GetWeight does not return what SetWeight stored (same layout)");
    }
  }
  return tame;
}

// The buffers of one MHA call, filled from the input (query, then key and
// value unless `same`), with output and weights set to the sentinel; `a`
// points at them. `tame`: the inputs are finite and bounded.
struct MhaCall {
  std::vector<float> q, k, v, out, w;
  bool tame = true;
};
MhaCall FillMhaCall(Reader& r, int64_t nq, int64_t nk, int64_t nv, int64_t nw,
                    bool same, bool want_weights, attnlab::MhaForwardArgs* a) {
  MhaCall c;
  c.q.resize(static_cast<size_t>(nq));
  c.tame = Fill(r, c.q);
  if (!same) {
    c.k.resize(static_cast<size_t>(nk));
    c.v.resize(static_cast<size_t>(nv));
    c.tame = Fill(r, c.k) && c.tame;
    c.tame = Fill(r, c.v) && c.tame;
  }
  c.out.assign(static_cast<size_t>(nq), kSentinel);
  c.w.assign(static_cast<size_t>(nw), kSentinel);
  a->query = c.q.data();
  a->key = same ? c.q.data() : c.k.data();
  a->value = same ? c.q.data() : c.v.data();
  a->output = c.out.data();
  a->weights = want_weights ? c.w.data() : nullptr;
  return c;
}

// Incremental decoding through a KvCache of fuzzed size: steps of fuzzed
// shapes (with or without a causal mask and weights) and truncations. Refused
// calls leave the cache length and the outputs as they were; accepted steps
// advance the length by Lk and give finite outputs and weights rows that sum
// to 1 for tame inputs.
void FuzzKvCache(Reader& r, attnlab::MultiHeadAttention& m, bool tame) {
  const int64_t e = m.config().embed_dim, h = m.config().num_heads;
  const int64_t kd = m.config().kdim, vd = m.config().vdim;
  const int64_t batch = r.Dim(), max_len = r.Dim();
  const int64_t cache_floats = Count({batch, max_len, e});
  Status cs;
  if (cache_floats <= 0 || cache_floats > kRunCap) {
    auto c = m.CreateKvCache(batch, max_len, &cs);
    if (batch < 1 || max_len < 1 || cache_floats < 0) {
      CHECK(c == nullptr && !cs.ok(), "CreateKvCache accepted invalid sizes");
    }
    return;
  }
  auto c = m.CreateKvCache(batch, max_len, &cs);
  if (!c) Fail("CreateKvCache refused valid sizes:", cs.message.c_str());
  // False once a step with wild inputs has put its K/V into the cache.
  bool cache_tame = true;
  const int steps = 1 + r.U8() % 5;
  for (int step = 0; step < steps; ++step) {
    const uint8_t flags = r.U8();
    const int64_t before = c->length();
    if (flags & 32) {
      const int64_t t = (flags & 64) ? r.Dim() : before - static_cast<int64_t>(r.U8() % 3);
      const Status s = c->Truncate(t);
      CHECK(s.ok() == (t >= 0 && t <= before), "Truncate accepted / refused wrongly");
      CHECK(c->length() == (s.ok() ? t : before), "Truncate set the wrong length");
      if (c->length() == 0) cache_tame = true;
      continue;
    }
    attnlab::MhaForwardArgs a;
    a.batch = (flags & 1) ? batch : r.Dim();
    a.lq = (flags & 2) ? 1 : r.Dim();
    a.lk = (flags & 4) ? a.lq : r.Dim();
    a.mask.causal = (flags & 8) != 0;
    const bool want_weights = (flags & 16) != 0;
    const bool same = (flags & 128) != 0 && a.lq == a.lk && kd == e && vd == e;
    const int64_t total = a.lk >= 1 && before <= kMaxElements - a.lk ? before + a.lk : -1;
    const int64_t nq = Count({a.batch, a.lq, e});
    const int64_t nk = Count({a.batch, a.lk, kd});
    const int64_t nv = Count({a.batch, a.lk, vd});
    const int64_t nw = want_weights ? Count({a.batch, h, a.lq, total}) : 0;
    const bool small = nq > 0 && nk > 0 && nv > 0 && nw >= 0 && total > 0 &&
                       Count({a.batch, a.lq, 3 * e}) > 0 && Count({a.batch, a.lq, 3 * e}) <= kRunCap &&
                       nk <= kRunCap && nv <= kRunCap && Count({a.batch, a.lk, e}) <= kRunCap &&
                       Count({a.batch, h, a.lq, total}) > 0 && Count({a.batch, h, a.lq, total}) <= kRunCap &&
                       Count({a.batch, a.lq, total}) * 2 * e <= kWorkCap;
    if (!small) continue;
    MhaCall call_buf = FillMhaCall(r, nq, nk, nv, nw, same, want_weights, &a);
    const std::vector<float>&out = call_buf.out, &w = call_buf.w;
    const bool call_tame = call_buf.tame && tame;
    a.cache = c.get();
    const Status s = m.Forward(a);
    if (a.batch != batch || total > max_len) {
      CHECK(!s.ok(), "Forward accepted a step that does not fit the cache");
      CHECK(c->length() == before, "a refused step changed the cache length");
      CHECK(Untouched(out) && Untouched(w), "Forward wrote on error");
      continue;
    }
    if (!s.ok()) Fail("Forward with a cache refused valid arguments:", s.message.c_str());
    CHECK(c->length() == total, "the cache length did not advance by Lk");
    if (before == 0) cache_tame = true;
    cache_tame = cache_tame && call_tame;
    if (!cache_tame) continue;
    CHECK(AllFinite(out.data(), nq), "non-finite MHA output with a cache from finite inputs");
    if (want_weights) CheckWeights(w.data(), nw / total, total);
  }
  CHECK(c->HeldBytes() >= 2 * cache_floats * 4, "KvCache HeldBytes");
}

void FuzzMha(Reader& r) {
  const MhaPlan plan = PlanMha(r);
  Status cs;
  if (!plan.valid) {
    auto m = attnlab::MultiHeadAttention::Create(plan.config, &cs);
    ExpectRefused("MultiHeadAttention", m, cs);
    return;
  }
  if (!plan.small) return;
  auto m = attnlab::MultiHeadAttention::Create(plan.config, &cs);
  if (!m) Fail("MultiHeadAttention::Create refused a valid config:", cs.message.c_str());
  const int64_t e = plan.config.embed_dim, h = plan.config.num_heads;
  const int64_t kd = m->config().kdim, vd = m->config().vdim;
  bool tame = FuzzWeights(r, *m);

  const int calls = 1 + r.U8() % 3;  // scratch is reused across calls
  for (int call = 0; call < calls; ++call) {
    attnlab::MhaForwardArgs a;
    a.batch = r.Dim();
    a.lq = r.Dim();
    const uint8_t flags = r.U8();
    a.lk = (flags & 1) ? a.lq : r.Dim();
    const bool want_weights = (flags & 2) != 0;
    a.average_weights = (flags & 4) != 0;
    const bool same = (flags & 8) != 0 && a.lq == a.lk && kd == e && vd == e;
    const int64_t nq = Count({a.batch, a.lq, e});
    const int64_t nk = Count({a.batch, a.lk, kd});
    const int64_t nv = Count({a.batch, a.lk, vd});
    const int64_t nw = want_weights ? Count({a.batch, a.average_weights ? 1 : h, a.lq, a.lk}) : 0;
    const bool sizes_ok = nq > 0 && nk > 0 && nv > 0 && nw >= 0;
    const bool small = sizes_ok && Count({a.batch, a.lq, 3 * e}) > 0 &&
                       Count({a.batch, a.lq, 3 * e}) <= kRunCap && nk <= kRunCap &&
                       nv <= kRunCap && Count({a.batch, a.lk, e}) <= kRunCap &&
                       Count({a.batch, h, a.lq, a.lk}) > 0 && Count({a.batch, h, a.lq, a.lk}) <= kRunCap &&
                       Count({a.batch, a.lq, a.lk}) * 2 * e <= kWorkCap;
    MaskPlan mask;
    PlanMask(r, small ? a.batch : 1, small ? h : 1, small ? a.lq : 1, small ? a.lk : 1, small, &mask);
    if (!small) {
      if (sizes_ok) continue;
      std::vector<float> q(2, kSentinel), out(2, kSentinel), w(2, kSentinel);
      a.query = a.key = a.value = q.data();
      a.output = out.data();
      a.weights = want_weights ? w.data() : nullptr;
      a.mask = mask.spec;
      CHECK(!m->Forward(a).ok(), "MultiHeadAttention::Forward accepted an invalid or oversized shape");
      CHECK(Untouched(out) && Untouched(w), "Forward wrote on error");
      continue;
    }
    if (mask.too_big) continue;
    MhaCall call_buf = FillMhaCall(r, nq, nk, nv, nw, same, want_weights, &a);
    const std::vector<float>&q = call_buf.q, &k = call_buf.k, &v = call_buf.v;
    std::vector<float>&out = call_buf.out, &w = call_buf.w;
    const bool call_tame = call_buf.tame && tame;
    a.mask = mask.spec;
    const Status s = m->Forward(a);
    if (!mask.valid) {
      CHECK(!s.ok(), "Forward accepted an invalid mask");
      CHECK(Untouched(out) && Untouched(w), "Forward wrote on error");
      continue;
    }
    if (!s.ok()) Fail("MultiHeadAttention::Forward refused valid arguments:", s.message.c_str());
    if (!(call_tame && mask.tame)) continue;
    CHECK(AllFinite(out.data(), nq), "non-finite MHA output from finite inputs");
    if (want_weights) CheckWeights(w.data(), nw / a.lk, a.lk);
    const MhaBounds bd = Bounds(*m, MaxAbs(q), same ? MaxAbs(q) : MaxAbs(k), same ? MaxAbs(q) : MaxAbs(v));
    Tolerance tol;
    if (!mask.compare || !CompareTolerance(bd.score, bd.terms, bd.out_value, mask.block, &tol)) continue;
    std::vector<float> out2(static_cast<size_t>(nq), kSentinel), w2(static_cast<size_t>(nw), kSentinel);
    a.output = out2.data();
    a.weights = want_weights ? w2.data() : nullptr;
    WithScalarKernels([&] { CHECK(m->Forward(a).ok(), "scalar run failed"); });
    CHECK(Agree(out.data(), out2.data(), nq, tol.output, 1e-4f), "SIMD and scalar MHA outputs differ");
    if (want_weights) CHECK(Agree(w.data(), w2.data(), nw, tol.weights, 0.0f), "SIMD and scalar MHA weights differ");
  }
  CHECK(m->HeldBytes() > 0, "HeldBytes");
  // Read last, so inputs that end earlier exercise the paths above unchanged.
  if (r.Bool()) FuzzKvCache(r, *m, tame);
}

void FuzzLayer(Reader& r) {
  MhaPlan plan = PlanMha(r);
  attnlab::LayerConfig c;
  c.mha = plan.config;
  static const float kP[] = {0.0f, 0.1f, 0.5f, 0.9f, 0.999f, 1.0f, -0.1f, kNaN};
  static const float kEps[] = {1e-5f, 1e-3f, 1e-12f, 0.0f, -1e-5f, kInf, kNaN, 1.0f};
  c.dropout = kP[r.U8() % 8];
  c.eps = kEps[r.U8() % 8];
  const bool self_dims = (c.mha.kdim == 0 || c.mha.kdim == c.mha.embed_dim) &&
                         (c.mha.vdim == 0 || c.mha.vdim == c.mha.embed_dim);
  const bool valid = plan.valid && self_dims && c.dropout >= 0.0f && c.dropout < 1.0f &&
                     c.eps > 0.0f && std::isfinite(c.eps);
  Status cs;
  if (!valid) {
    auto l = attnlab::SelfAttentionLayer::Create(c, &cs);
    ExpectRefused("SelfAttentionLayer", l, cs);
    return;
  }
  if (!plan.small) return;
  auto l = attnlab::SelfAttentionLayer::Create(c, &cs);
  if (!l) Fail("SelfAttentionLayer::Create refused a valid config:", cs.message.c_str());
  const int64_t e = c.mha.embed_dim, h = c.mha.num_heads;
  bool tame = FuzzWeights(r, l->mha());
  if (r.Bool()) {
    std::vector<float> g(static_cast<size_t>(e)), b(static_cast<size_t>(e));
    tame = Fill(r, g) && tame;
    tame = Fill(r, b) && tame;
    CHECK(l->SetNorm(r.Bool() ? g.data() : nullptr, b.data()).ok(), "SetNorm");
    std::vector<float> g2(static_cast<size_t>(e)), b2(static_cast<size_t>(e));
    CHECK(l->GetNorm(g2.data(), b2.data()).ok(), "GetNorm");
  }
  attnlab::LayerForwardArgs a;
  a.batch = r.Dim();
  a.seq_len = r.Dim();
  const uint8_t flags = r.U8();
  a.training = (flags & 1) != 0;
  a.dropout_seed = r.U32();
  const bool want_weights = (flags & 2) != 0;
  a.average_weights = (flags & 4) != 0;
  const int64_t nx = Count({a.batch, a.seq_len, e});
  const int64_t nw = want_weights ? Count({a.batch, a.average_weights ? 1 : h, a.seq_len, a.seq_len}) : 0;
  const bool sizes_ok = nx > 0 && nw >= 0;
  const bool small = sizes_ok && Count({a.batch, a.seq_len, 3 * e}) > 0 &&
                     Count({a.batch, a.seq_len, 3 * e}) <= kRunCap &&
                     Count({a.batch, h, a.seq_len, a.seq_len}) > 0 &&
                     Count({a.batch, h, a.seq_len, a.seq_len}) <= kRunCap &&
                     Count({a.batch, a.seq_len, a.seq_len}) * 2 * e <= kWorkCap;
  MaskPlan mask;
  PlanMask(r, small ? a.batch : 1, small ? h : 1, small ? a.seq_len : 1, small ? a.seq_len : 1, small, &mask);
  if (!small) {
    if (sizes_ok) return;
    std::vector<float> x(2, kSentinel), out(2, kSentinel), w(2, kSentinel);
    a.x = x.data();
    a.output = out.data();
    a.weights = want_weights ? w.data() : nullptr;
    a.mask = mask.spec;
    CHECK(!l->Forward(a).ok(), "SelfAttentionLayer::Forward accepted an invalid or oversized shape");
    CHECK(Untouched(out) && Untouched(w), "layer Forward wrote on error");
    return;
  }
  if (mask.too_big) return;
  std::vector<float> x(static_cast<size_t>(nx));
  tame = Fill(r, x) && tame;
  std::vector<float> out(static_cast<size_t>(nx), kSentinel), w(static_cast<size_t>(nw), kSentinel);
  a.x = x.data();
  a.output = out.data();
  a.weights = want_weights ? w.data() : nullptr;
  a.mask = mask.spec;
  const Status s = l->Forward(a);
  if (!mask.valid) {
    CHECK(!s.ok(), "layer Forward accepted an invalid mask");
    CHECK(Untouched(out) && Untouched(w), "layer Forward wrote on error");
    return;
  }
  if (!s.ok()) Fail("SelfAttentionLayer::Forward refused valid arguments:", s.message.c_str());
  if (!(tame && mask.tame && c.eps >= 1e-5f)) return;
  CHECK(AllFinite(out.data(), nx), "non-finite layer output from finite inputs");
  if (want_weights) CheckWeights(w.data(), nw / a.seq_len, a.seq_len);
  const float xmax = MaxAbs(x);
  const MhaBounds bd = Bounds(l->mha(), xmax, xmax, xmax);
  Tolerance tol;
  if (!mask.compare || !CompareTolerance(bd.score, bd.terms, bd.out_value, mask.block, &tol)) return;
  std::vector<float> gamma(static_cast<size_t>(e)), beta(static_cast<size_t>(e));
  CHECK(l->GetNorm(gamma.data(), beta.data()).ok(), "GetNorm");
  // LayerNorm divides the MHA difference by sqrt(var + eps) >= sqrt(eps).
  const float out_tol = (tol.output + 1e-5f * (xmax + static_cast<float>(bd.out_value))) *
                            (MaxAbs(gamma) + 1.0f) / std::sqrt(c.eps) + 1e-4f;
  std::vector<float> out2(static_cast<size_t>(nx), kSentinel), w2(static_cast<size_t>(nw), kSentinel);
  a.output = out2.data();
  a.weights = want_weights ? w2.data() : nullptr;
  WithScalarKernels([&] { CHECK(l->Forward(a).ok(), "scalar run failed"); });
  CHECK(Agree(out.data(), out2.data(), nx, out_tol, 1e-4f), "SIMD and scalar layer outputs differ");
  if (want_weights) CHECK(Agree(w.data(), w2.data(), nw, tol.weights, 0.0f), "SIMD and scalar layer weights differ");
}

void FuzzLayerNorm(Reader& r) {
  const int64_t rows = r.Dim(), dim = r.Dim();
  const uint8_t flags = r.U8();
  static const float kEps[] = {1e-5f, 1e-3f, 1.0f, 1e-12f, 0.0f, -1.0f, kInf, kNaN};
  const float eps = kEps[r.U8() % 8];
  const bool eps_ok = eps > 0.0f && std::isfinite(eps);
  const int64_t n = Count({rows, dim});
  if (n < 0 || !eps_ok) {
    std::vector<float> x(2, 1.0f), y(2, kSentinel);
    CHECK(!attnlab::AddLayerNorm(rows, dim, x.data(), nullptr, nullptr, nullptr, eps, y.data()).ok(),
          "AddLayerNorm accepted an invalid size or eps");
    CHECK(Untouched(y), "AddLayerNorm wrote on error");
    return;
  }
  if (n > kRunCap) return;
  std::vector<float> x(static_cast<size_t>(n)), res, g, b;
  bool tame = Fill(r, x);
  if (flags & 1) { res.resize(static_cast<size_t>(n)); tame = Fill(r, res) && tame; }
  if (flags & 2) { g.resize(static_cast<size_t>(dim)); tame = Fill(r, g) && tame; }
  if (flags & 4) { b.resize(static_cast<size_t>(dim)); tame = Fill(r, b) && tame; }
  std::vector<float> y(static_cast<size_t>(n), kSentinel);
  const bool in_place = (flags & 8) != 0;
  float* out = in_place ? x.data() : y.data();
  std::vector<float> x_copy = x;
  const Status s = attnlab::AddLayerNorm(rows, dim, x.data(), res.empty() ? nullptr : res.data(),
                                         g.empty() ? nullptr : g.data(), b.empty() ? nullptr : b.data(),
                                         eps, out);
  if (!s.ok()) Fail("AddLayerNorm refused valid arguments:", s.message.c_str());
  if (!tame || eps < 1e-5f) return;
  CHECK(AllFinite(out, n), "non-finite LayerNorm output from finite inputs");
  std::vector<float> y2(static_cast<size_t>(n), kSentinel);
  WithScalarKernels([&] {
    CHECK(attnlab::AddLayerNorm(rows, dim, x_copy.data(), res.empty() ? nullptr : res.data(),
                                g.empty() ? nullptr : g.data(), b.empty() ? nullptr : b.data(), eps,
                                y2.data()).ok(), "scalar run failed");
  });
  CHECK(Agree(out, y2.data(), n, 5e-3f, 5e-3f), "SIMD and scalar LayerNorm differ");
}

void FuzzDropout(Reader& r) {
  const int64_t d = r.Dim();
  const int64_t n = d == std::numeric_limits<int64_t>::min() ? d : d - 1;  // 0 is allowed here
  static const float kP[] = {0.0f, 0.1f, 0.5f, 0.9f, 0.999f, 1.0f, -0.1f, kNaN};
  const float p = kP[r.U8() % 8];
  const uint32_t seed = r.U32();
  const bool p_ok = p >= 0.0f && p < 1.0f;
  if (n < 0 || n > kMaxElements || !p_ok) {
    std::vector<float> x(2, kSentinel);
    CHECK(!attnlab::Dropout(n, p, seed, x.data()).ok(), "Dropout accepted an invalid n or p");
    CHECK(Untouched(x), "Dropout wrote on error");
    return;
  }
  if (n > kRunCap) return;
  std::vector<float> x(static_cast<size_t>(n));
  Fill(r, x);
  std::vector<float> before = x;
  if (!attnlab::Dropout(n, p, seed, x.data()).ok()) Fail("Dropout refused valid arguments");
  const float scale = 1.0f / (1.0f - p);
  for (int64_t i = 0; i < n; ++i) {
    const bool dropped = attnlab::DropoutUniform(seed, static_cast<uint32_t>(i)) < p;
    const float want = dropped ? 0.0f : before[i] * scale;
    CHECK(std::memcmp(&want, &x[i], sizeof(float)) == 0 || (std::isnan(want) && std::isnan(x[i])),
          "Dropout element differs from the documented rule");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader r(data, size);
  switch (r.U8() % 6) {
    case 0: FuzzPositionalEncoding(r); break;
    case 1: FuzzSdpa(r); break;
    case 2: FuzzMha(r); break;
    case 3: FuzzLayer(r); break;
    case 4: FuzzLayerNorm(r); break;
    default: FuzzDropout(r); break;
  }
  return 0;
}

// Gradient checks of the training core (src/train): every backward against
// central finite differences of the float64 references in reference.h (or
// float64 references written here from the documented formulas), on odd
// sizes, every mask kind, and both kernel sets.
//
// Error measure: ‖g − g_fd‖₂ / max(‖g_fd‖₂, 1e-6) ≤ 1e-3 per gradient tensor,
// where g_fd[i] = (f(x + h·eᵢ) − f(x − h·eᵢ)) / 2h in double with h = 1e-5 and
// f = Σ dOut ⊙ forward(x) (a random projection of the output).
#include <functional>
#include <limits>

#include "reference.h"
#include "train/ops.h"
#include "train/train.h"

namespace attnlab_test {
namespace {

using attnlab::Status;
using attnlab::WeightId;

constexpr double kTol = 1e-3;
constexpr double kStep = 1e-5;

// Relative L2 error of float gradient vs double reference.
double RelErr(const float* got, const std::vector<double>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = got[i] - want[i];
    num += d * d;
    den += want[i] * want[i];
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-6);
}

// Central differences of f with respect to the float parameter vector x
// (x is perturbed in double through a double copy that f reads).
std::vector<double> NumGrad(std::vector<double>* x,
                            const std::function<double()>& f) {
  std::vector<double> g(x->size());
  for (size_t i = 0; i < x->size(); ++i) {
    const double keep = (*x)[i];
    (*x)[i] = keep + kStep;
    const double fp = f();
    (*x)[i] = keep - kStep;
    const double fm = f();
    (*x)[i] = keep;
    g[i] = (fp - fm) / (2 * kStep);
  }
  return g;
}

double Dot(const std::vector<double>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

std::vector<double> D(const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); }
std::vector<float> F(const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); }

// ---------------------------------------------------------------------------
// SDPA

struct SdpaCase {
  const char* name;
  int64_t B, H, Lq, Lk, D, Dv;
  bool causal;
  bool lengths;
  MaskKind kind;
  bool has_scale;
};

class SdpaBackwardTest : public ::testing::TestWithParam<std::tuple<SdpaCase, bool>> {};

TEST_P(SdpaBackwardTest, MatchesFiniteDifferences) {
  const SdpaCase c = std::get<0>(GetParam());
  ScopedKernelSet kernels(std::get<1>(GetParam()));
  Rng rng(7 + static_cast<uint32_t>(c.Lq * 13 + c.Lk));
  const int64_t nq = c.B * c.H * c.Lq * c.D, nk = c.B * c.H * c.Lk * c.D,
                nv = c.B * c.H * c.Lk * c.Dv, no = c.B * c.H * c.Lq * c.Dv;
  auto q = rng.Vector(nq), k = rng.Vector(nk), v = rng.Vector(nv), dout = rng.Vector(no);
  RefMask mask;
  mask.causal = c.causal;
  if (c.lengths) {
    for (int64_t b = 0; b < c.B; ++b) mask.lengths.push_back(static_cast<int32_t>(b == 0 ? c.Lk : 1 + b % c.Lk));
  }
  if (c.kind != MaskKind::kNone) FillTensorMask(&mask, c.kind, c.B, 1, c.Lq, c.Lk, rng);
  if (c.kind != MaskKind::kNone) mask.shape[1] = 1;
  const double scale = c.has_scale ? 0.37 : 1.0 / std::sqrt(static_cast<double>(c.D));

  attnlab::SdpaBackwardArgs a;
  a.forward.batch = c.B;
  a.forward.heads = c.H;
  a.forward.lq = c.Lq;
  a.forward.lk = c.Lk;
  a.forward.d = c.D;
  a.forward.dv = c.Dv;
  a.forward.q = q.data();
  a.forward.k = k.data();
  a.forward.v = v.data();
  a.forward.has_scale = c.has_scale;
  a.forward.scale = 0.37f;
  a.forward.mask = mask.Spec();
  a.d_output = dout.data();
  std::vector<float> dq(nq), dk(nk), dv(nv), out(no);
  a.dq = dq.data();
  a.dk = dk.data();
  a.dv = dv.data();
  a.forward.output = out.data();
  ASSERT_TRUE(attnlab::ScaledDotProductAttentionBackward(a).ok());

  auto qd = D(q), kd = D(k), vd = D(v);
  auto f = [&]() {
    std::vector<double> o, w;
    RefSdpa(c.B, c.H, c.Lq, c.Lk, c.D, c.Dv, qd.data(), kd.data(), vd.data(), scale, mask, &o, &w);
    return Dot(o, dout);
  };
  {
    std::vector<double> o, w;
    RefSdpa(c.B, c.H, c.Lq, c.Lk, c.D, c.Dv, qd.data(), kd.data(), vd.data(), scale, mask, &o, &w);
    EXPECT_TRUE(ExpectAllClose(out.data(), o.data(), no, 1e-5, 1e-4, "output"));
  }
  EXPECT_LE(RelErr(dq.data(), NumGrad(&qd, f)), kTol) << c.name << " dq " << mask.Describe();
  EXPECT_LE(RelErr(dk.data(), NumGrad(&kd, f)), kTol) << c.name << " dk";
  EXPECT_LE(RelErr(dv.data(), NumGrad(&vd, f)), kTol) << c.name << " dv";
}

const SdpaCase kSdpaCases[] = {
    {"plain", 2, 3, 5, 7, 3, 5, false, false, MaskKind::kNone, false},
    {"scale", 1, 2, 7, 5, 5, 3, false, false, MaskKind::kNone, true},
    {"causal", 2, 2, 9, 9, 3, 3, true, false, MaskKind::kNone, false},
    {"causal_lq_ne_lk", 1, 3, 5, 8, 4, 3, true, false, MaskKind::kNone, false},
    {"lengths", 3, 2, 5, 7, 3, 3, false, true, MaskKind::kNone, false},
    {"keep", 2, 3, 5, 7, 3, 3, false, false, MaskKind::kKeep, false},
    {"block", 2, 2, 7, 5, 3, 5, false, false, MaskKind::kBlock, false},
    {"additive", 2, 2, 5, 9, 3, 3, false, false, MaskKind::kAdditive, false},
    {"all_kinds", 3, 2, 6, 6, 3, 3, true, true, MaskKind::kKeep, true},
    {"tiles", 1, 1, 131, 9, 3, 2, true, false, MaskKind::kNone, false},
};

INSTANTIATE_TEST_SUITE_P(
    Train, SdpaBackwardTest,
    ::testing::Combine(::testing::ValuesIn(kSdpaCases), ::testing::Bool()),
    [](const auto& info) {
      return std::string(std::get<0>(info.param).name) + "_" + KernelSetName(std::get<1>(info.param));
    });

// ---------------------------------------------------------------------------
// SDPA backward for today's variants (GQA/MQA, softcap, windows, alignments
// and offsets, ALiBi, the −∞ fill), against finite differences of
// RefSdpaModern in double. Wholly masked rows (bottom-right causal with
// Lq > Lk, keep zeros, a zero length) must give zero dq/dk, never NaN.

struct ModernCase {
  const char* name;
  int64_t B, H, Hkv, Lq, Lk, D, Dv;
  double softcap;
  double fill;        // kFill or -inf
  int causal;         // 0 none, 1 top-left, 2 bottom-right
  int64_t causal_offset;
  int window;         // 0 none, 1 top-left, 2 bottom-right
  int64_t left, right, window_offset;
  bool alibi;
  bool lengths;
  MaskKind kind;
};

class SdpaModernBackwardTest
    : public ::testing::TestWithParam<std::tuple<ModernCase, bool>> {};

TEST_P(SdpaModernBackwardTest, MatchesFiniteDifferences) {
  const ModernCase c = std::get<0>(GetParam());
  ScopedKernelSet kernels(std::get<1>(GetParam()));
  Rng rng(11 + static_cast<uint32_t>(c.Lq * 17 + c.Lk * 3 + c.H));
  const int64_t hkv = c.Hkv;
  const int64_t nq = c.B * c.H * c.Lq * c.D, nk = c.B * hkv * c.Lk * c.D,
                nv = c.B * hkv * c.Lk * c.Dv, no = c.B * c.H * c.Lq * c.Dv;
  // Scores up to ~±3 so that softcap 2 bends them.
  auto q = rng.Vector(nq, -1.5f, 1.5f), k = rng.Vector(nk, -1.5f, 1.5f);
  auto v = rng.Vector(nv), dout = rng.Vector(no);
  RefModern m;
  m.kv_heads = hkv;
  m.softcap = c.softcap;
  m.fill = c.fill;
  m.causal = c.causal != 0;
  m.causal_bottom_right = c.causal == 2;
  m.causal_offset = c.causal_offset;
  m.window = c.window != 0;
  m.window_bottom_right = c.window == 2;
  m.left = c.left;
  m.right = c.right;
  m.window_offset = c.window_offset;
  if (c.alibi) {
    for (double x : RefAlibiSlopes(c.H)) m.slopes.push_back(static_cast<float>(x));
  }
  if (c.lengths) {
    for (int64_t b = 0; b < c.B; ++b) m.lengths.push_back(static_cast<int32_t>(b == 0 ? c.Lk : (b * 3) % (c.Lk + 1)));
  }
  if (c.kind != MaskKind::kNone) {
    FillTensorMask(&m.tensor, c.kind, c.B, 1, c.Lq, c.Lk, rng);
    m.tensor.shape[1] = 1;
  }
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.D));

  attnlab::SdpaBackwardArgs a;
  a.forward.batch = c.B;
  a.forward.heads = c.H;
  a.forward.kv_heads = hkv;
  a.forward.lq = c.Lq;
  a.forward.lk = c.Lk;
  a.forward.d = c.D;
  a.forward.dv = c.Dv;
  a.forward.q = q.data();
  a.forward.k = k.data();
  a.forward.v = v.data();
  a.forward.has_softcap = c.softcap > 0.0;
  a.forward.softcap = static_cast<float>(c.softcap);
  a.forward.mask = m.Spec();
  a.d_output = dout.data();
  std::vector<float> dq(nq), dk(nk), dv(nv), out(no);
  a.dq = dq.data();
  a.dk = dk.data();
  a.dv = dv.data();
  a.forward.output = out.data();
  const Status st = attnlab::ScaledDotProductAttentionBackward(a);
  ASSERT_TRUE(st.ok()) << st.message;
  EXPECT_TRUE(AllFinite(dq.data(), nq) && AllFinite(dk.data(), nk) && AllFinite(dv.data(), nv));

  auto qd = D(q), kd = D(k), vd = D(v);
  auto f = [&]() {
    std::vector<double> o, w;
    RefSdpaModern(c.B, c.H, c.Lq, c.Lk, c.D, c.Dv, qd.data(), kd.data(), vd.data(), scale, m, &o, &w);
    return Dot(o, dout);
  };
  {
    std::vector<double> o, w;
    RefSdpaModern(c.B, c.H, c.Lq, c.Lk, c.D, c.Dv, qd.data(), kd.data(), vd.data(), scale, m, &o, &w);
    EXPECT_TRUE(ExpectAllClose(out.data(), o.data(), no, 1e-5, 1e-4, "output"));
  }
  EXPECT_LE(RelErr(dq.data(), NumGrad(&qd, f)), kTol) << c.name << " dq " << m.Describe();
  EXPECT_LE(RelErr(dk.data(), NumGrad(&kd, f)), kTol) << c.name << " dk " << m.Describe();
  EXPECT_LE(RelErr(dv.data(), NumGrad(&vd, f)), kTol) << c.name << " dv " << m.Describe();
}

const double kNegInf = -std::numeric_limits<double>::infinity();
const ModernCase kModernCases[] = {
    // name                B  H Hkv Lq  Lk  D Dv  cap  fill     causal off win  l   r  woff alibi len  kind
    {"gqa",                2, 6, 2, 5,  7,  3, 5, 0.0, kFill,   0, 0,  0, -1, -1, 0, false, false, MaskKind::kNone},
    {"mqa_causal",         1, 3, 1, 7,  7,  5, 3, 0.0, kFill,   1, 0,  0, -1, -1, 0, false, false, MaskKind::kNone},
    {"softcap",            2, 2, 2, 5,  9,  3, 3, 2.0, kFill,   0, 0,  0, -1, -1, 0, false, false, MaskKind::kNone},
    {"softcap_causal_gqa", 1, 4, 2, 7,  7,  3, 3, 1.5, kFill,   1, 0,  0, -1, -1, 0, false, false, MaskKind::kNone},
    {"window_top_left",    2, 2, 2, 9,  9,  3, 3, 0.0, kFill,   0, 0,  1,  2,  1, 0, false, false, MaskKind::kNone},
    {"window_causal",      1, 3, 3, 9,  11, 3, 3, 0.0, kFill,   1, 0,  1,  3, -1, 0, false, false, MaskKind::kNone},
    {"window_bottom_right",2, 2, 1, 5,  11, 3, 3, 0.0, kFill,   0, 0,  2,  2,  0, 0, false, true,  MaskKind::kNone},
    {"window_offset",      1, 2, 2, 5,  9,  3, 3, 0.0, kFill,   0, 0,  1,  1,  1, 3, false, false, MaskKind::kNone},
    {"causal_bottom_right",2, 2, 2, 5,  9,  3, 3, 0.0, kFill,   2, 0,  0, -1, -1, 0, false, true,  MaskKind::kNone},
    {"causal_br_lq_gt_lk", 1, 2, 2, 9,  5,  3, 3, 0.0, kFill,   2, 0,  0, -1, -1, 0, false, false, MaskKind::kNone},
    {"causal_br_neg_inf",  1, 2, 2, 9,  5,  3, 3, 0.0, kNegInf, 2, 0,  0, -1, -1, 0, false, false, MaskKind::kNone},
    {"causal_offset",      2, 2, 2, 5,  9,  3, 3, 0.0, kFill,   1, 3,  0, -1, -1, 0, false, false, MaskKind::kNone},
    {"alibi_causal",       2, 3, 3, 7,  7,  3, 3, 0.0, kFill,   1, 0,  0, -1, -1, 0, true,  false, MaskKind::kNone},
    {"alibi_br_padding",   3, 5, 5, 4,  7,  3, 3, 0.0, kFill,   2, 0,  0, -1, -1, 0, true,  true,  MaskKind::kNone},
    {"neg_inf_keep",       2, 2, 2, 5,  7,  3, 3, 0.0, kNegInf, 0, 0,  0, -1, -1, 0, false, false, MaskKind::kKeep},
    {"neg_inf_padding",    3, 2, 1, 5,  7,  3, 3, 0.0, kNegInf, 1, 0,  0, -1, -1, 0, false, true,  MaskKind::kNone},
    {"additive_softcap",   2, 2, 2, 5,  9,  3, 3, 2.0, kFill,   0, 0,  0, -1, -1, 0, false, false, MaskKind::kAdditive},
    {"everything",         3, 4, 2, 7,  9,  5, 3, 1.5, kFill,   2, 0,  2,  3,  1, 0, true,  true,  MaskKind::kAdditive},
    {"tiles_window_br",    1, 2, 1, 131, 9, 3, 2, 0.0, kNegInf, 2, 0,  2,  2,  0, 0, false, false, MaskKind::kNone},
};

INSTANTIATE_TEST_SUITE_P(
    Train, SdpaModernBackwardTest,
    ::testing::Combine(::testing::ValuesIn(kModernCases), ::testing::Bool()),
    [](const auto& info) {
      return std::string(std::get<0>(info.param).name) + "_" + KernelSetName(std::get<1>(info.param));
    });

TEST(TrainOps, SdpaBackwardRejectsBadVariants) {
  std::vector<float> x(2 * 3 * 4 * 4, 0.5f), g(x.size());
  attnlab::SdpaBackwardArgs a;
  a.forward.batch = 2;
  a.forward.heads = 3;
  a.forward.kv_heads = 2;
  a.forward.lq = a.forward.lk = 4;
  a.forward.d = a.forward.dv = 4;
  a.forward.q = a.forward.k = a.forward.v = x.data();
  a.d_output = x.data();
  a.dq = a.dk = a.dv = g.data();
  Status s = attnlab::ScaledDotProductAttentionBackward(a);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message.find("multiple of the key/value heads"), std::string::npos) << s.message;
  a.forward.kv_heads = 3;
  a.forward.has_softcap = true;
  a.forward.softcap = -1.0f;
  s = attnlab::ScaledDotProductAttentionBackward(a);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message.find("softcap"), std::string::npos) << s.message;
}

// ---------------------------------------------------------------------------
// MHA with GQA/MQA and rotary embedding on Q and K (MultiHeadAttentionBackward
// with num_kv_heads and rope, and the transformer's positional 'rope'):
// against finite differences of a double cross-attention with RefRotate at
// positions 0..L−1 (angles from RefRopeAngles) and RefSdpaModern (GQA).

struct MhaVariantCase {
  const char* name;
  int64_t E, H, Hkv;
  bool rope;
  int64_t rope_dim;  // 0: D
  bool interleaved;
  bool causal;
};
class MhaVariantBackwardTest : public ::testing::TestWithParam<std::tuple<MhaVariantCase, bool>> {};

TEST_P(MhaVariantBackwardTest, MatchesFiniteDifferences) {
  const MhaVariantCase c = std::get<0>(GetParam());
  ScopedKernelSet kernels(std::get<1>(GetParam()));
  const int64_t B = 2, Lq = 5, Lk = 7, E = c.E, H = c.H, Hkv = c.Hkv, Dh = E / H, Ekv = Hkv * Dh;
  const int64_t R = c.rope_dim > 0 ? c.rope_dim : Dh, half = R / 2;
  const double base = 500.0;
  Rng rng(31 + static_cast<uint32_t>(E + H));
  MhaWeights w;
  w.wq = rng.Vector(E * E, -0.7f, 0.7f);
  w.wk = rng.Vector(Ekv * E, -0.7f, 0.7f);
  w.wv = rng.Vector(Ekv * E, -0.7f, 0.7f);
  w.wo = rng.Vector(E * E, -0.7f, 0.7f);
  w.bq = rng.Vector(E, -0.7f, 0.7f);
  w.bk = rng.Vector(Ekv, -0.7f, 0.7f);
  w.bv = rng.Vector(Ekv, -0.7f, 0.7f);
  w.bo = rng.Vector(E, -0.7f, 0.7f);
  auto query = rng.Vector(B * Lq * E), key = rng.Vector(B * Lk * E), value = rng.Vector(B * Lk * E),
       dout = rng.Vector(B * Lq * E);
  RefModern m;
  m.kv_heads = Hkv;
  m.causal = c.causal;
  m.causal_bottom_right = c.causal;

  attnlab::MhaBackwardArgs a;
  a.config.embed_dim = E;
  a.config.num_heads = H;
  a.config.num_kv_heads = Hkv;
  a.config.rope = c.rope;
  a.config.rope_dim = c.rope_dim;
  a.config.rope_base = base;
  a.config.rope_interleaved = c.interleaved;
  std::vector<float>* ws[8] = {&w.wq, &w.bq, &w.wk, &w.bk, &w.wv, &w.bv, &w.wo, &w.bo};
  std::vector<std::vector<float>> g(8);
  for (int i = 0; i < 8; ++i) {
    a.params.w[i] = ws[i]->data();
    g[i].assign(ws[i]->size(), 0.0f);
    a.grads.w[i] = g[i].data();
  }
  a.batch = B;
  a.lq = Lq;
  a.lk = Lk;
  a.query = query.data();
  a.key = key.data();
  a.value = value.data();
  a.mask = m.Spec();
  a.d_output = dout.data();
  std::vector<float> out(query.size()), dq(query.size()), dk(key.size()), dv(value.size());
  a.output = out.data();
  a.d_query = dq.data();
  a.d_key = dk.data();
  a.d_value = dv.data();
  const Status st = attnlab::MultiHeadAttentionBackward(a);
  ASSERT_TRUE(st.ok()) << st.message;

  std::vector<double> qd = D(query), kd = D(key), vd = D(value);
  std::vector<double> wd[8];
  for (int i = 0; i < 8; ++i) wd[i] = D(*ws[i]);
  auto forward = [&]() {
    auto lin = [&](const std::vector<double>& in, int64_t rows, int64_t outw, const std::vector<double>& W,
                   const std::vector<double>& b) {
      std::vector<double> y(static_cast<size_t>(rows * outw));
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t o = 0; o < outw; ++o) {
          double acc = b[o];
          for (int64_t i = 0; i < E; ++i) acc += in[r * E + i] * W[o * E + i];
          y[r * outw + o] = acc;
        }
      return y;
    };
    auto Q = lin(qd, B * Lq, E, wd[0], wd[1]), K = lin(kd, B * Lk, Ekv, wd[2], wd[3]),
         V = lin(vd, B * Lk, Ekv, wd[4], wd[5]);
    // Split heads ([B, L, heads·D] → [B, heads, L, D]), rotating at position l.
    auto split = [&](const std::vector<double>& X, int64_t L, int64_t heads, bool rotate) {
      std::vector<double> y(X.size()), cs(static_cast<size_t>(half)), sn(static_cast<size_t>(half));
      for (int64_t b = 0; b < B; ++b)
        for (int64_t l = 0; l < L; ++l) {
          RefRopeAngles(static_cast<double>(l), R, base, cs.data(), sn.data());
          for (int64_t h = 0; h < heads; ++h) {
            const double* src = &X[(b * L + l) * heads * Dh + h * Dh];
            const auto r = rotate ? RefRotate(src, Dh, R, c.interleaved, cs.data(), sn.data())
                                  : std::vector<double>(src, src + Dh);
            for (int64_t d = 0; d < Dh; ++d) y[((b * heads + h) * L + l) * Dh + d] = r[d];
          }
        }
      return y;
    };
    const auto Qh = split(Q, Lq, H, c.rope), Kh = split(K, Lk, Hkv, c.rope), Vh = split(V, Lk, Hkv, false);
    std::vector<double> ctx_h, wts;
    RefSdpaModern(B, H, Lq, Lk, Dh, Dh, Qh.data(), Kh.data(), Vh.data(), 1.0 / std::sqrt(double(Dh)), m, &ctx_h, &wts);
    std::vector<double> ctx(static_cast<size_t>(B * Lq * E));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t l = 0; l < Lq; ++l)
          for (int64_t d = 0; d < Dh; ++d) ctx[(b * Lq + l) * E + h * Dh + d] = ctx_h[((b * H + h) * Lq + l) * Dh + d];
    return lin(ctx, B * Lq, E, wd[6], wd[7]);
  };
  EXPECT_TRUE(ExpectAllClose(out.data(), forward().data(), B * Lq * E, 1e-5, 1e-4, "output"));
  auto f = [&]() { return Dot(forward(), dout); };
  EXPECT_LE(RelErr(dq.data(), NumGrad(&qd, f)), kTol) << "dQuery";
  EXPECT_LE(RelErr(dk.data(), NumGrad(&kd, f)), kTol) << "dKey";
  EXPECT_LE(RelErr(dv.data(), NumGrad(&vd, f)), kTol) << "dValue";
  static const char* kNames[8] = {"wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo"};
  for (int i = 0; i < 8; ++i) {
    if (i == static_cast<int>(WeightId::kBk) && !c.rope) continue;  // exactly 0 (shift invariance)
    EXPECT_LE(RelErr(g[i].data(), NumGrad(&wd[i], f)), kTol) << kNames[i];
  }
}

const MhaVariantCase kMhaVariantCases[] = {
    {"rope", 8, 2, 2, true, 0, false, false},
    {"rope_causal", 8, 2, 2, true, 0, false, true},
    {"gqa", 12, 6, 3, false, 0, false, true},
    {"mqa_rope_partial_interleaved", 12, 3, 1, true, 2, true, false},
    {"gqa_rope", 8, 4, 2, true, 0, false, true},
};
INSTANTIATE_TEST_SUITE_P(
    Train, MhaVariantBackwardTest,
    ::testing::Combine(::testing::ValuesIn(kMhaVariantCases), ::testing::Bool()),
    [](const auto& info) {
      return std::string(std::get<0>(info.param).name) + "_" + KernelSetName(std::get<1>(info.param));
    });

// ---------------------------------------------------------------------------
// MHA

struct MhaCase {
  const char* name;
  int64_t B, Lq, Lk, E, H, kdim, vdim;
  bool bias, causal;
};
class MhaBackwardTest : public ::testing::TestWithParam<std::tuple<MhaCase, bool>> {};

TEST_P(MhaBackwardTest, MatchesFiniteDifferences) {
  const MhaCase c = std::get<0>(GetParam());
  ScopedKernelSet kernels(std::get<1>(GetParam()));
  Rng rng(11);
  MhaWeights w = RandomMhaWeights(rng, c.E, c.kdim, c.vdim, c.bias);
  auto query = rng.Vector(c.B * c.Lq * c.E), key = rng.Vector(c.B * c.Lk * c.kdim),
       value = rng.Vector(c.B * c.Lk * c.vdim), dout = rng.Vector(c.B * c.Lq * c.E);
  RefMask mask;
  mask.causal = c.causal;
  if (!c.causal) {
    for (int64_t b = 0; b < c.B; ++b) mask.lengths.push_back(static_cast<int32_t>(c.Lk - b % c.Lk));
  }
  attnlab::MhaBackwardArgs a;
  a.config.embed_dim = c.E;
  a.config.num_heads = c.H;
  a.config.kdim = c.kdim;
  a.config.vdim = c.vdim;
  a.config.bias = c.bias;
  std::vector<float>* ws[8] = {&w.wq, &w.bq, &w.wk, &w.bk, &w.wv, &w.bv, &w.wo, &w.bo};
  std::vector<std::vector<float>> grads(8);
  for (int i = 0; i < 8; ++i) {
    a.params.w[i] = OrNull(*ws[i]);
    grads[i].assign(ws[i]->size(), 0.0f);
    a.grads.w[i] = grads[i].empty() ? nullptr : grads[i].data();
  }
  a.batch = c.B;
  a.lq = c.Lq;
  a.lk = c.Lk;
  a.query = query.data();
  a.key = key.data();
  a.value = value.data();
  a.mask = mask.Spec();
  a.d_output = dout.data();
  std::vector<float> dq(query.size()), dk(key.size()), dv(value.size());
  a.d_query = dq.data();
  a.d_key = dk.data();
  a.d_value = dv.data();
  ASSERT_TRUE(attnlab::MultiHeadAttentionBackward(a).ok());

  // f = Σ dout ⊙ RefMha(...) with every input held in double copies.
  std::vector<double> qd = D(query), kd = D(key), vd = D(value);
  std::vector<double> wd[8];
  for (int i = 0; i < 8; ++i) wd[i] = D(*ws[i]);
  auto f = [&]() {
    MhaWeights wf;
    std::vector<float>* dst[8] = {&wf.wq, &wf.bq, &wf.wk, &wf.bk, &wf.wv, &wf.bv, &wf.wo, &wf.bo};
    (void)dst;
    // RefMha takes float weights and inputs: evaluate the double copies
    // exactly by a double forward written out here.
    const int64_t E = c.E, H = c.H, Dh = E / H;
    auto lin = [&](const std::vector<double>& x, int64_t rows, int64_t in, const std::vector<double>& W,
                   const std::vector<double>& b) {
      std::vector<double> y(static_cast<size_t>(rows * E));
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t o = 0; o < E; ++o) {
          double acc = b.empty() ? 0.0 : b[o];
          for (int64_t i = 0; i < in; ++i) acc += x[r * in + i] * W[o * in + i];
          y[r * E + o] = acc;
        }
      return y;
    };
    auto Q = lin(qd, c.B * c.Lq, E, wd[0], wd[1]);
    auto K = lin(kd, c.B * c.Lk, c.kdim, wd[2], wd[3]);
    auto V = lin(vd, c.B * c.Lk, c.vdim, wd[4], wd[5]);
    auto split = [&](const std::vector<double>& x, int64_t L) {
      std::vector<double> y(x.size());
      for (int64_t b = 0; b < c.B; ++b)
        for (int64_t l = 0; l < L; ++l)
          for (int64_t h = 0; h < H; ++h)
            for (int64_t d = 0; d < Dh; ++d)
              y[((b * H + h) * L + l) * Dh + d] = x[(b * L + l) * E + h * Dh + d];
      return y;
    };
    auto Qh = split(Q, c.Lq), Kh = split(K, c.Lk), Vh = split(V, c.Lk);
    std::vector<double> ctx_h, wts;
    RefSdpa(c.B, H, c.Lq, c.Lk, Dh, Dh, Qh.data(), Kh.data(), Vh.data(), 1.0 / std::sqrt(double(Dh)), mask,
            &ctx_h, &wts);
    std::vector<double> ctx(static_cast<size_t>(c.B * c.Lq * E));
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t l = 0; l < c.Lq; ++l)
          for (int64_t d = 0; d < Dh; ++d)
            ctx[(b * c.Lq + l) * E + h * Dh + d] = ctx_h[((b * H + h) * c.Lq + l) * Dh + d];
    auto out = lin(ctx, c.B * c.Lq, E, wd[6], wd[7]);
    return Dot(out, dout);
  };
  EXPECT_LE(RelErr(dq.data(), NumGrad(&qd, f)), kTol) << "dQuery";
  EXPECT_LE(RelErr(dk.data(), NumGrad(&kd, f)), kTol) << "dKey";
  EXPECT_LE(RelErr(dv.data(), NumGrad(&vd, f)), kTol) << "dValue";
  static const char* kNames[8] = {"wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo"};
  for (int i = 0; i < 8; ++i) {
    if (wd[i].empty()) continue;
    const auto fd = NumGrad(&wd[i], f);
    if (i == static_cast<int>(WeightId::kBk)) {
      // Softmax is shift-invariant per row: adding bk adds q·bk to every
      // score of a row, so its exact gradient is 0 (both sides, to roundoff).
      for (size_t j = 0; j < fd.size(); ++j) {
        EXPECT_NEAR(fd[j], 0.0, 1e-6);
        EXPECT_NEAR(grads[i][j], 0.0, 1e-5);
      }
      continue;
    }
    EXPECT_LE(RelErr(grads[i].data(), fd), kTol) << kNames[i];
  }
}

const MhaCase kMhaCases[] = {
    {"self_bias", 2, 5, 5, 6, 2, 6, 6, true, true},
    {"kdim_vdim", 2, 3, 5, 6, 3, 5, 7, true, false},
    {"no_bias", 1, 4, 7, 9, 3, 4, 5, false, false},
};
INSTANTIATE_TEST_SUITE_P(
    Train, MhaBackwardTest,
    ::testing::Combine(::testing::ValuesIn(kMhaCases), ::testing::Bool()),
    [](const auto& info) {
      return std::string(std::get<0>(info.param).name) + "_" + KernelSetName(std::get<1>(info.param));
    });

// ---------------------------------------------------------------------------
// Layer ops: residual + LayerNorm, GELU, linear, embedding, cross-entropy

TEST(TrainOps, ResidualLayerNormBackward) {
  Rng rng(3);
  const int64_t R = 5, E = 7;
  auto x = rng.Vector(R * E), r = rng.Vector(R * E), gamma = rng.Vector(E), beta = rng.Vector(E),
       dy = rng.Vector(R * E);
  std::vector<float> dz(R * E), dg(E, 0.0f), db(E, 0.0f);
  attnlab::train::ResidualLayerNormBackward(R, E, x.data(), r.data(), gamma.data(), 1e-5f, dy.data(),
                                            dz.data(), dg.data(), db.data());
  auto xd = D(x), gd = D(gamma), bd = D(beta);
  auto f = [&]() {
    std::vector<double> z(xd.size());
    for (size_t i = 0; i < z.size(); ++i) z[i] = xd[i] + r[i];
    const auto g32 = F(gd), b32 = F(bd);
    // RefLayerNorm takes float gamma/beta; apply them in double here instead.
    auto y = RefLayerNorm(R, E, z, nullptr, nullptr, 1e-5);
    double s = 0;
    for (int64_t i = 0; i < R * E; ++i) s += (y[i] * gd[i % E] + bd[i % E]) * dy[i];
    (void)g32;
    (void)b32;
    return s;
  };
  EXPECT_LE(RelErr(dz.data(), NumGrad(&xd, f)), kTol);
  EXPECT_LE(RelErr(dg.data(), NumGrad(&gd, f)), kTol);
  EXPECT_LE(RelErr(db.data(), NumGrad(&bd, f)), kTol);
}

TEST(TrainOps, GeluBackward) {
  Rng rng(4);
  auto x = rng.Vector(37, -4.0f, 4.0f), dy = rng.Vector(37);
  std::vector<float> dx(37), y(37);
  attnlab::train::GeluForward(37, x.data(), y.data());
  attnlab::train::GeluBackward(37, x.data(), dy.data(), dx.data());
  auto xd = D(x);
  auto f = [&]() {
    double s = 0;
    for (size_t i = 0; i < xd.size(); ++i) s += 0.5 * xd[i] * (1 + std::erf(xd[i] / std::sqrt(2.0))) * dy[i];
    return s;
  };
  for (size_t i = 0; i < xd.size(); ++i) {
    EXPECT_NEAR(y[i], 0.5 * xd[i] * (1 + std::erf(xd[i] / std::sqrt(2.0))), 1e-5);
  }
  EXPECT_LE(RelErr(dx.data(), NumGrad(&xd, f)), kTol);
}

class LinearBackwardTest : public ::testing::TestWithParam<bool> {};
TEST_P(LinearBackwardTest, MatchesFiniteDifferences) {
  ScopedKernelSet kernels(GetParam());
  Rng rng(5);
  const int64_t R = 13, in = 7, out = 11;
  auto x = rng.Vector(R * in), w = rng.Vector(out * in), b = rng.Vector(out), dy = rng.Vector(R * out);
  std::vector<float> y(R * out), dx(R * in), dw(out * in, 0.0f), db(out, 0.0f);
  attnlab::train::Workspace ws;
  ASSERT_TRUE(attnlab::train::LinearForward(R, in, out, x.data(), w.data(), b.data(), y.data(), &ws));
  ASSERT_TRUE(attnlab::train::LinearBackward(R, in, out, x.data(), w.data(), dy.data(), dx.data(), false,
                                             dw.data(), db.data(), &ws));
  auto xd = D(x), wd = D(w), bd = D(b);
  auto f = [&]() {
    double s = 0;
    for (int64_t r = 0; r < R; ++r)
      for (int64_t o = 0; o < out; ++o) {
        double acc = bd[o];
        for (int64_t i = 0; i < in; ++i) acc += xd[r * in + i] * wd[o * in + i];
        s += acc * dy[r * out + o];
      }
    return s;
  };
  EXPECT_LE(RelErr(dx.data(), NumGrad(&xd, f)), kTol);
  EXPECT_LE(RelErr(dw.data(), NumGrad(&wd, f)), kTol);
  EXPECT_LE(RelErr(db.data(), NumGrad(&bd, f)), kTol);
}
INSTANTIATE_TEST_SUITE_P(Train, LinearBackwardTest, ::testing::Bool(),
                         [](const auto& info) { return KernelSetName(info.param); });

TEST(TrainOps, CrossEntropyWithLossMask) {
  Rng rng(6);
  const int64_t R = 9, L = 3, V = 5;
  auto logits = rng.Vector(R * V, -3.0f, 3.0f);
  std::vector<int32_t> t(R);
  std::vector<float> mask(R);
  for (int64_t r = 0; r < R; ++r) {
    t[r] = static_cast<int32_t>(rng.Int(0, V - 1));
    mask[r] = r % 4 == 1 ? 0.0f : 1.0f;
  }
  std::vector<float> dl(R * V);
  attnlab::train::CrossEntropyResult res;
  attnlab::train::CrossEntropyForwardBackward(R, L, V, logits.data(), t.data(), mask.data(), dl.data(), &res);
  auto ld = D(logits);
  auto f = [&]() {
    double s = 0, wsum = 0;
    for (int64_t r = 0; r < R; ++r) {
      double mx = -1e300, sum = 0;
      for (int64_t j = 0; j < V; ++j) mx = std::max(mx, ld[r * V + j]);
      for (int64_t j = 0; j < V; ++j) sum += std::exp(ld[r * V + j] - mx);
      s += mask[r] * (std::log(sum) + mx - ld[r * V + t[r]]);
      wsum += mask[r];
    }
    return s / wsum;
  };
  EXPECT_NEAR(res.loss / res.weight, f(), 1e-6);
  EXPECT_LE(RelErr(dl.data(), NumGrad(&ld, f)), kTol);
}

TEST(TrainOps, EmbeddingAndDropoutBackward) {
  Rng rng(8);
  const int64_t R = 6, L = 3, E = 4, V = 5;
  auto table = rng.Vector(V * E), pos = rng.Vector(L * E), dy = rng.Vector(R * E);
  std::vector<int32_t> tok = {0, 3, 3, 4, 1, 3};
  std::vector<float> dt(V * E, 0.0f), dp(L * E, 0.0f);
  attnlab::train::EmbeddingBackward(R, L, E, tok.data(), dy.data(), dt.data(), dp.data());
  auto td = D(table), pd = D(pos);
  auto f = [&]() {
    double s = 0;
    for (int64_t r = 0; r < R; ++r)
      for (int64_t j = 0; j < E; ++j) s += (td[tok[r] * E + j] + pd[(r % L) * E + j]) * dy[r * E + j];
    return s;
  };
  EXPECT_LE(RelErr(dt.data(), NumGrad(&td, f)), kTol);
  EXPECT_LE(RelErr(dp.data(), NumGrad(&pd, f)), kTol);
  // Dropout: y_i = x_i·[u_i >= p]/(1-p) with the documented uniform.
  auto g = rng.Vector(50);
  auto g2 = g;
  attnlab::train::DropoutBackward(50, 0.3f, 1234u, g2.data());
  for (int i = 0; i < 50; ++i) {
    const double want = RefDropoutUniform(1234u, i) < 0.3f ? 0.0 : g[i] / 0.7;
    EXPECT_NEAR(g2[i], want, 1e-6);
  }
}

// ---------------------------------------------------------------------------
// Self-attention layer: LN(x + Dropout(MHA(x))) with dropout on.

TEST(TrainOps, SelfAttentionLayerBackward) {
  Rng rng(9);
  const int64_t B = 2, L = 5, E = 6, H = 2;
  MhaWeights w = RandomMhaWeights(rng, E, E, E, true);
  auto x = rng.Vector(B * L * E), dout = rng.Vector(B * L * E), gamma = rng.Vector(E, 0.5f, 1.5f),
       beta = rng.Vector(E);
  attnlab::LayerBackwardArgs a;
  a.config.embed_dim = E;
  a.config.num_heads = H;
  std::vector<float>* ws[8] = {&w.wq, &w.bq, &w.wk, &w.bk, &w.wv, &w.bv, &w.wo, &w.bo};
  std::vector<std::vector<float>> grads(8);
  for (int i = 0; i < 8; ++i) {
    a.params.w[i] = ws[i]->data();
    grads[i].assign(ws[i]->size(), 0.0f);
    a.grads.w[i] = grads[i].data();
  }
  a.gamma = gamma.data();
  a.beta = beta.data();
  a.dropout = 0.25f;
  a.training = true;
  a.dropout_seed = 77;
  a.batch = B;
  a.seq_len = L;
  a.x = x.data();
  a.mask.causal = true;
  a.d_output = dout.data();
  std::vector<float> dx(x.size()), dg(E), db(E), out(x.size());
  a.output = out.data();
  a.dx = dx.data();
  a.d_gamma = dg.data();
  a.d_beta = db.data();
  ASSERT_TRUE(attnlab::SelfAttentionLayerBackward(a).ok());

  RefMask mask;
  mask.causal = true;
  auto xd = D(x), gd = D(gamma);
  auto f = [&]() {
    // MHA in double via RefMha with float weights (weights not perturbed here).
    std::vector<double> mha_out, wts;
    const auto x32 = F(xd);
    // RefMha reads float inputs; perturbations of 1e-5 survive float only
    // partly, so run the double path on x directly:
    (void)x32;
    std::vector<double> Q, K, V;
    const int64_t Dh = E / H;
    auto lin = [&](const std::vector<float>& W, const std::vector<float>& b) {
      std::vector<double> y(static_cast<size_t>(B * L * E));
      for (int64_t r = 0; r < B * L; ++r)
        for (int64_t o = 0; o < E; ++o) {
          double acc = b[o];
          for (int64_t i = 0; i < E; ++i) acc += xd[r * E + i] * W[o * E + i];
          y[r * E + o] = acc;
        }
      return y;
    };
    Q = lin(w.wq, w.bq);
    K = lin(w.wk, w.bk);
    V = lin(w.wv, w.bv);
    auto split = [&](const std::vector<double>& t) {
      std::vector<double> y(t.size());
      for (int64_t b = 0; b < B; ++b)
        for (int64_t l = 0; l < L; ++l)
          for (int64_t h = 0; h < H; ++h)
            for (int64_t d = 0; d < Dh; ++d) y[((b * H + h) * L + l) * Dh + d] = t[(b * L + l) * E + h * Dh + d];
      return y;
    };
    auto Qh = split(Q), Kh = split(K), Vh = split(V);
    std::vector<double> ctx_h;
    RefSdpa(B, H, L, L, Dh, Dh, Qh.data(), Kh.data(), Vh.data(), 1.0 / std::sqrt(double(Dh)), mask, &ctx_h, &wts);
    std::vector<double> ctx(static_cast<size_t>(B * L * E));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t l = 0; l < L; ++l)
          for (int64_t d = 0; d < Dh; ++d) ctx[(b * L + l) * E + h * Dh + d] = ctx_h[((b * H + h) * L + l) * Dh + d];
    auto o = RefLinearTorch(B * L, E, E, ctx.data(), w.wo.data(), w.bo.data());
    std::vector<double> z(o.size());
    for (size_t i = 0; i < z.size(); ++i) {
      const double drop = RefDropoutUniform(77, static_cast<uint32_t>(i)) < 0.25f ? 0.0 : o[i] / 0.75;
      z[i] = xd[i] + drop;
    }
    auto y = RefLayerNorm(B * L, E, z, nullptr, nullptr, 1e-5);
    double s = 0;
    for (size_t i = 0; i < y.size(); ++i) s += (y[i] * gd[i % E] + beta[i % E]) * dout[i];
    return s;
  };
  EXPECT_LE(RelErr(dx.data(), NumGrad(&xd, f)), kTol) << "dx";
  EXPECT_LE(RelErr(dg.data(), NumGrad(&gd, f)), kTol) << "dgamma";
}

// ---------------------------------------------------------------------------
// Transformer: whole-model gradient through the optimizer-free path, and
// determinism.

TEST(Transformer, LossDecreasesAndIsDeterministic) {
  attnlab::TransformerConfig c;
  c.vocab_size = 7;
  c.max_length = 6;
  c.embed_dim = 16;
  c.num_heads = 2;
  c.num_layers = 2;
  c.ffn_dim = 24;
  c.dropout = 0.1f;
  c.seed = 5;
  auto run = [&]() {
    Status s;
    auto t = attnlab::Transformer::Create(c, &s);
    EXPECT_TRUE(s.ok()) << s.message;
    attnlab::AdamWConfig o;
    o.lr = 3e-3f;
    o.warmup = 5;
    EXPECT_TRUE(t->ConfigureOptimizer(o).ok());
    std::vector<int32_t> tok(8 * 6), tgt(8 * 6);
    std::vector<float> m(8 * 6);
    std::vector<double> losses;
    for (int step = 0; step < 40; ++step) {
      EXPECT_TRUE(attnlab::GenerateTask(attnlab::TaskKind::kReverse, 8, 6, 7, 100 + step, tok.data(), tgt.data(),
                                        m.data()).ok());
      attnlab::StepResult r;
      Status st = t->Step(8, 6, tok.data(), tgt.data(), m.data(), &r);
      EXPECT_TRUE(st.ok()) << st.message;
      losses.push_back(r.loss);
    }
    return losses;
  };
  const auto a = run(), b = run();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]) << "step " << i;
  EXPECT_LT(a.back(), a.front() * 0.9);
}

class TransformerGradientTest : public ::testing::TestWithParam<attnlab::Positional> {};

TEST_P(TransformerGradientTest, ModelGradientMatchesDirectionalDifferences) {
  // Whole-model consistency (the per-op checks above are the float64 ones):
  // the step's gradient g against central differences of the float loss
  // along random directions u: (loss(p + εu) − loss(p − εu)) / 2ε ≈ g·u.
  attnlab::TransformerConfig c;
  c.vocab_size = 5;
  c.max_length = 5;
  c.embed_dim = 8;
  c.num_heads = 2;
  c.num_layers = 2;
  c.ffn_dim = 7;
  c.causal = true;
  c.positional = GetParam();
  c.seed = 3;
  Status s;
  auto t = attnlab::Transformer::Create(c, &s);
  ASSERT_TRUE(s.ok());
  const int64_t B = 2, L = 5;
  std::vector<int32_t> tok(B * L), tgt(B * L);
  std::vector<float> m(B * L);
  ASSERT_TRUE(attnlab::GenerateTask(attnlab::TaskKind::kShift, B, L, 5, 9, tok.data(), tgt.data(), m.data()).ok());
  m[3] = 0.0f;
  const int64_t n = t->ParamCount();
  std::vector<float> p0(t->Params(), t->Params() + n);
  attnlab::AdamWConfig o;
  o.lr = 0.0f;
  o.weight_decay = 0.0f;
  ASSERT_TRUE(t->ConfigureOptimizer(o).ok());
  attnlab::StepResult r;
  ASSERT_TRUE(t->Step(B, L, tok.data(), tgt.data(), m.data(), &r).ok());
  std::vector<float> g(t->Gradients(), t->Gradients() + n);
  Rng rng(21);
  for (int trial = 0; trial < 3; ++trial) {
    auto u = rng.Vector(n);
    double gu = 0.0;
    for (int64_t i = 0; i < n; ++i) gu += static_cast<double>(g[i]) * u[i];
    const float eps = 1e-3f;
    auto loss_at = [&](float sign) {
      std::vector<float> p = p0;
      for (int64_t i = 0; i < n; ++i) p[i] += sign * eps * u[i];
      EXPECT_TRUE(t->SetParams(p.data()).ok());
      attnlab::StepResult e;
      EXPECT_TRUE(t->Evaluate(B, L, tok.data(), tgt.data(), m.data(), &e).ok());
      return e.loss;
    };
    const double fd = (loss_at(1.0f) - loss_at(-1.0f)) / (2.0 * eps);
    EXPECT_NEAR(gu, fd, 1e-2 * std::max(1.0, std::fabs(fd))) << "direction " << trial;
  }
}
INSTANTIATE_TEST_SUITE_P(Transformer, TransformerGradientTest,
                         ::testing::Values(attnlab::Positional::kLearned, attnlab::Positional::kRope),
                         [](const auto& info) {
                           return std::string(info.param == attnlab::Positional::kRope ? "Rope" : "Learned");
                         });

TEST(Transformer, RopeNeedsAnEvenHeadDim) {
  attnlab::TransformerConfig c;
  c.vocab_size = 5;
  c.max_length = 4;
  c.embed_dim = 6;
  c.num_heads = 2;
  c.ffn_dim = 4;
  c.positional = attnlab::Positional::kRope;
  Status s;
  EXPECT_EQ(attnlab::Transformer::Create(c, &s), nullptr);
  EXPECT_NE(s.message.find("even head dim"), std::string::npos) << s.message;
}

TEST(Transformer, RejectsBadInput) {
  attnlab::TransformerConfig c;
  c.vocab_size = 5;
  c.max_length = 4;
  c.embed_dim = 4;
  c.num_heads = 2;
  c.ffn_dim = 8;
  Status s;
  auto t = attnlab::Transformer::Create(c, &s);
  ASSERT_TRUE(s.ok());
  std::vector<int32_t> tok = {0, 1, 2, 5}, tgt = {0, 1, 2, 3};
  std::vector<float> zeros(4, 0.0f);
  attnlab::StepResult r;
  s = t->Step(1, 4, tok.data(), tgt.data(), nullptr, &r);
  EXPECT_EQ(s.code, attnlab::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message.find("[0, 4]"), std::string::npos) << s.message;
  tok[3] = 4;
  s = t->Step(1, 4, tok.data(), tgt.data(), zeros.data(), &r);
  EXPECT_NE(s.message.find("all zeros"), std::string::npos) << s.message;
  std::vector<int32_t> longer(5, 0);
  s = t->Step(1, 5, longer.data(), longer.data(), nullptr, &r);
  EXPECT_NE(s.message.find("maxLength"), std::string::npos) << s.message;
  attnlab::AdamWConfig o;
  o.lr = std::nanf("");
  EXPECT_FALSE(t->ConfigureOptimizer(o).ok());
  o.lr = -1.0f;
  EXPECT_FALSE(t->ConfigureOptimizer(o).ok());
  // A loss that becomes non-finite stops the step and keeps the weights.
  std::vector<float> p(t->Params(), t->Params() + t->ParamCount());
  std::vector<float> huge = p;
  for (auto& x : huge) x *= 1e30f;
  ASSERT_TRUE(t->SetParams(huge.data()).ok());
  s = t->Step(1, 4, tok.data(), tgt.data(), nullptr, &r);
  EXPECT_EQ(s.code, attnlab::StatusCode::kFailedPrecondition) << s.message;
  EXPECT_EQ(0, std::memcmp(t->Params(), huge.data(), huge.size() * sizeof(float)));
}

}  // namespace
}  // namespace attnlab_test

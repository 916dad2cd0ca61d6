// GEMV for weights in torch layout: y[M, N] = x[M, K]·W[N, K]ᵀ + bias with
// M small (decoding: one new token a call). No packing: each row of W is
// read once, contiguously, and dotted with the M rows of x, so a step
// streams the weights from memory exactly once (decoding is bound by memory
// bandwidth; packing W first would read it twice and write it once).
//
// SIMD: 4 rows of W a block, one accumulator vector per (x row, W row);
// for M <= 2 that is at most 8 accumulators + 1 x vector + 4 W vectors,
// inside the ~13 v128 registers V8 gives a wasm function. M > 2 runs the
// x rows two at a time over the same W block (still in L1). Each output is
// one lane-wise chain of multiply-adds over K, then a horizontal sum and
// the scalar tail, so the result does not depend on the thread count or on
// which block an output falls in.
//
// Streams: a block's four rows are not neighbours but one from each quarter
// of the range (Quartets below), so a call reads four far-apart places that
// each move forward through memory block after block: four long sequential
// streams, which the hardware prefetches. Four neighbouring rows a block
// restart four 3 KB streams every block (GPT-2's head: K = 768), which one
// core here read at 7-9 GB/s, against 11-16 GB/s for four long streams.
// Packed panels (GemvPacked) are grouped the same way.
// Scalar: the plain dot product per output, in k order.
// Threads: outputs split into six long ranges a thread (GemvRanges).
#include <algorithm>
#include <cstdint>

#include "kernels/gemv_util.h"
#include "kernels/kernels.h"
#include "kernels/simd.h"
#include "thread_pool.h"

namespace attnlab {
namespace kernels {

namespace scalar {
void GemvT(int64_t m, int64_t n, int64_t k, const float* x, int64_t ldx,
           const float* w, int64_t ldw, const float* bias, float* y,
           int64_t ldy) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      const float* wr = w + j * ldw;
      const float* xr = x + i * ldx;
      float s = 0.0f;
      for (int64_t p = 0; p < k; ++p) s += xr[p] * wr[p];
      y[i * ldy + j] = s + (bias ? bias[j] : 0.0f);
    }
  }
}
int64_t HalfRowGroup() { return 1; }
void GemvTHalf(int64_t m, int64_t n, int64_t k, const float* x, int64_t ldx,
               const HalfMatrix& w, const float* bias, float* y, int64_t ldy) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      const uint16_t* wr = w.data + j * w.ld;
      const float* xr = x + i * ldx;
      float s = 0.0f;
      for (int64_t p = 0; p < k; ++p) s += xr[p] * HalfToFloat(wr[HalfRowOffset(w, p)], w.kind);
      y[i * ldy + j] = s + (bias ? bias[j] : 0.0f);
    }
  }
}
void GemvPacked(int64_t m, int64_t n, int64_t k, const float* x, int64_t ldx,
                const PackedB& b, const float* bias, float* y, int64_t ldy) {
  if (b.half != nullptr) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        const float* xr = x + i * ldx;
        float s = 0.0f;
        for (int64_t p = 0; p < k; ++p) s += xr[p] * HalfToFloat(b.half[HalfOffset(b, p, j)], b.kind);
        y[i * ldy + j] = s + (bias ? bias[j] : 0.0f);
      }
    }
    return;
  }
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      const float* col = b.data + (j / b.nr) * b.panel_stride + j % b.nr;
      const float* xr = x + i * ldx;
      float s = 0.0f;
      for (int64_t p = 0; p < k; ++p) s += xr[p] * col[p * b.nr];
      y[i * ldy + j] = s + (bias ? bias[j] : 0.0f);
    }
  }
}
}  // namespace scalar

#if ATTNLAB_SIMD
namespace simd {
namespace {
using gemv_util::GemvRanges;
using gemv_util::kMinParallelGemv;
using gemv_util::Quartets;

// Outputs j0..j1 of x rows i0, i0+1 (two when two_rows).
template <bool kTwoRows>
void GemvRows(int64_t i0, int64_t j0, int64_t j1, int64_t k, const float* x,
              int64_t ldx, const float* w, int64_t ldw, const float* bias,
              float* y, int64_t ldy) {
  const float* x0 = x + i0 * ldx;
  const float* x1 = kTwoRows ? x0 + ldx : x0;
  const int64_t kv = k - k % kWidth;
  const Quartets blocks(j0, j1);
  for (int64_t g = 0; g < blocks.blocks(); ++g) {
    int64_t js[4];
    const float* ws[4];
    blocks.Rows(g, w, ldw, js, ws);
    const float *w0 = ws[0], *w1 = ws[1], *w2 = ws[2], *w3 = ws[3];
    Batch a0(0.0f), a1(0.0f), a2(0.0f), a3(0.0f);
    Batch b0(0.0f), b1(0.0f), b2(0.0f), b3(0.0f);
    for (int64_t p = 0; p < kv; p += kWidth) {
      const Batch xa = Batch::load_unaligned(x0 + p);
      const Batch v0 = Batch::load_unaligned(w0 + p);
      const Batch v1 = Batch::load_unaligned(w1 + p);
      const Batch v2 = Batch::load_unaligned(w2 + p);
      const Batch v3 = Batch::load_unaligned(w3 + p);
      a0 += xa * v0;
      a1 += xa * v1;
      a2 += xa * v2;
      a3 += xa * v3;
      if (kTwoRows) {
        const Batch xb = Batch::load_unaligned(x1 + p);
        b0 += xb * v0;
        b1 += xb * v1;
        b2 += xb * v2;
        b3 += xb * v3;
      }
    }
    float s[2][4] = {{xsimd::hadd(a0), xsimd::hadd(a1), xsimd::hadd(a2), xsimd::hadd(a3)},
                     {xsimd::hadd(b0), xsimd::hadd(b1), xsimd::hadd(b2), xsimd::hadd(b3)}};
    for (int r = 0; r < (kTwoRows ? 2 : 1); ++r) {
      const float* xr = r == 0 ? x0 : x1;
      for (int q = 0; q < 4; ++q) {
        float t = s[r][q];
        for (int64_t p = kv; p < k; ++p) t += xr[p] * ws[q][p];
        y[(i0 + r) * ldy + js[q]] = t + (bias ? bias[js[q]] : 0.0f);
      }
    }
  }
  for (int64_t j = blocks.rest(); j < j1; ++j) {
    const float* wr = w + j * ldw;
    for (int r = 0; r < (kTwoRows ? 2 : 1); ++r) {
      const float* xr = r == 0 ? x0 : x1;
      Batch acc(0.0f);
      for (int64_t p = 0; p < kv; p += kWidth) {
        acc += Batch::load_unaligned(xr + p) * Batch::load_unaligned(wr + p);
      }
      float t = xsimd::hadd(acc);
      for (int64_t p = kv; p < k; ++p) t += xr[p] * wr[p];
      y[(i0 + r) * ldy + j] = t + (bias ? bias[j] : 0.0f);
    }
  }
}

void GemvBlock(int64_t m, int64_t j0, int64_t j1, int64_t k, const float* x,
               int64_t ldx, const float* w, int64_t ldw, const float* bias,
               float* y, int64_t ldy) {
  int64_t i = 0;
  for (; i + 2 <= m; i += 2) GemvRows<true>(i, j0, j1, k, x, ldx, w, ldw, bias, y, ldy);
  if (i < m) GemvRows<false>(i, j0, j1, k, x, ldx, w, ldw, bias, y, ldy);
}

// GemvRows over 16-bit rows (groups of 2·kWidth, k a multiple), one x row
// at a time: a group widens into its elements [0, kWidth) and [kWidth,
// 2·kWidth), which meet each lane's accumulator in the order the float
// loop's two steps do, so every output is GemvRows' chain over the widened
// values (the x rows' pairing there shares loads only).
template <HalfKind kKind>
void GemvHalfRows(int64_t m, int64_t j0, int64_t j1, int64_t k, const float* x,
                  int64_t ldx, const uint16_t* w, int64_t ldw, const float* bias,
                  float* y, int64_t ldy) {
  for (int64_t i = 0; i < m; ++i) {
    const float* xr = x + i * ldx;
    float* yr = y + i * ldy;
    const Quartets blocks(j0, j1);
    for (int64_t g = 0; g < blocks.blocks(); ++g) {
      int64_t js[4];
      const uint16_t* ws[4];
      blocks.Rows(g, w, ldw, js, ws);
      const uint16_t *w0 = ws[0], *w1 = ws[1], *w2 = ws[2], *w3 = ws[3];
      Batch a0(0.0f), a1(0.0f), a2(0.0f), a3(0.0f), lo, hi;
      for (int64_t p = 0; p < k; p += 2 * kWidth) {
        const Batch xl = Batch::load_unaligned(xr + p);
        const Batch xh = Batch::load_unaligned(xr + p + kWidth);
        WidenHalves<kKind>(w0 + p, &lo, &hi);
        a0 += xl * lo;
        a0 += xh * hi;
        WidenHalves<kKind>(w1 + p, &lo, &hi);
        a1 += xl * lo;
        a1 += xh * hi;
        WidenHalves<kKind>(w2 + p, &lo, &hi);
        a2 += xl * lo;
        a2 += xh * hi;
        WidenHalves<kKind>(w3 + p, &lo, &hi);
        a3 += xl * lo;
        a3 += xh * hi;
      }
      const Batch* acc[4] = {&a0, &a1, &a2, &a3};
      for (int q = 0; q < 4; ++q) yr[js[q]] = xsimd::hadd(*acc[q]) + (bias ? bias[js[q]] : 0.0f);
    }
    for (int64_t j = blocks.rest(); j < j1; ++j) {
      const uint16_t* wr = w + j * ldw;
      Batch acc(0.0f), lo, hi;
      for (int64_t p = 0; p < k; p += 2 * kWidth) {
        WidenHalves<kKind>(wr + p, &lo, &hi);
        acc += Batch::load_unaligned(xr + p) * lo;
        acc += Batch::load_unaligned(xr + p + kWidth) * hi;
      }
      yr[j] = xsimd::hadd(acc) + (bias ? bias[j] : 0.0f);
    }
  }
}

void GemvHalfBlock(int64_t m, int64_t j0, int64_t j1, int64_t k, const float* x,
                   int64_t ldx, const HalfMatrix& w, const float* bias, float* y,
                   int64_t ldy) {
  if (w.kind == HalfKind::kBF16) {
    GemvHalfRows<HalfKind::kBF16>(m, j0, j1, k, x, ldx, w.data, w.ld, bias, y, ldy);
  } else {
    GemvHalfRows<HalfKind::kF16>(m, j0, j1, k, x, ldx, w.data, w.ld, bias, y, ldy);
  }
}
}  // namespace

int64_t HalfRowGroup() { return 2 * kWidth; }

void GemvTHalf(int64_t m, int64_t n, int64_t k, const float* x, int64_t ldx,
               const HalfMatrix& w, const float* bias, float* y, int64_t ldy) {
  const int64_t align = static_cast<int64_t>(sizeof(float)) * kWidth;
  if (w.group != 2 * kWidth || k % w.group != 0 || (w.ld * 2) % align != 0 ||
      reinterpret_cast<uintptr_t>(w.data) % static_cast<uintptr_t>(align) != 0) {
    scalar::GemvTHalf(m, n, k, x, ldx, w, bias, y, ldy);  // another set's layout
    return;
  }
  const int threads = internal::ThreadsFor(m * n * k, kMinParallelGemv);
  if (threads == 1) {
    GemvHalfBlock(m, 0, n, k, x, ldx, w, bias, y, ldy);
    return;
  }
  GemvRanges(n, 64, threads, [&](int64_t j0, int64_t j1) {
    GemvHalfBlock(m, j0, j1, k, x, ldx, w, bias, y, ldy);
  });
}

void GemvT(int64_t m, int64_t n, int64_t k, const float* x, int64_t ldx,
           const float* w, int64_t ldw, const float* bias, float* y,
           int64_t ldy) {
  const int threads = internal::ThreadsFor(m * n * k, kMinParallelGemv);
  if (threads == 1) {
    GemvBlock(m, 0, n, k, x, ldx, w, ldw, bias, y, ldy);
    return;
  }
  GemvRanges(n, 64, threads, [&](int64_t j0, int64_t j1) {
    GemvBlock(m, j0, j1, k, x, ldx, w, ldw, bias, y, ldy);
  });
}

namespace {
// Panels p0..p1 of a packed B (nr = 2·kWidth columns each) for the m <= 4
// rows of x, one row at a time. Four panels share each broadcast of x[k]
// (8 accumulators + the broadcast + the loads fit the ~13 v128 registers),
// so a broadcast feeds 8 vector multiply-adds, as many weights per x load
// as GemvT's 4-row blocks; a remainder of panels goes one at a time.
void StorePanel(const Batch& lo, const Batch& hi, int64_t j0, int64_t cols, const float* bias,
                float* yrow) {
  alignas(64) float out[2 * kWidth];
  lo.store_aligned(out);
  hi.store_aligned(out + kWidth);
  for (int64_t c = 0; c < cols; ++c) yrow[j0 + c] = out[c] + (bias ? bias[j0 + c] : 0.0f);
}

// One panel row as two vectors: float32 panels (b.data), loaded; 16-bit
// panels (b.half), widened as they are loaded (WidenHalves), so both run the
// same chains of multiply-adds and the 16-bit outputs equal the float32 ones
// over the widened values, from half the bytes streamed.
struct FloatRows {
  using Elem = float;
  static const float* Base(const PackedB& b) { return b.data; }
  static void Load(const float* row, Batch* lo, Batch* hi) {
    *lo = Batch::load_aligned(row);
    *hi = Batch::load_aligned(row + kWidth);
  }
};
template <HalfKind kKind>
struct HalfRows {
  using Elem = uint16_t;
  static const uint16_t* Base(const PackedB& b) { return b.half; }
  static void Load(const uint16_t* row, Batch* lo, Batch* hi) { WidenHalves<kKind>(row, lo, hi); }
};

// The panels' width here (SimdPanels checks it).
constexpr int64_t kPanelWidth = 2 * kWidth;

template <class Rows>
void GemvPanels(int64_t m, int64_t n, int64_t k, const float* x, int64_t ldx,
                const PackedB& b, const float* bias, float* y, int64_t ldy,
                int64_t p0, int64_t p1) {
  using Elem = typename Rows::Elem;
  const int64_t nr = b.nr, ps = b.panel_stride;
  const Elem* base = Rows::Base(b);
  auto cols = [&](int64_t p) { return std::min<int64_t>(nr, n - p * nr); };
  for (int64_t i = 0; i < m; ++i) {
    const float* xr = x + i * ldx;
    float* yr = y + i * ldy;
    const Quartets blocks(p0, p1);
    for (int64_t g = 0; g < blocks.blocks(); ++g) {
      int64_t ps4[4];
      const Elem* qs[4];
      blocks.Rows(g, base, ps, ps4, qs);
      const Elem *q0 = qs[0], *q1 = qs[1], *q2 = qs[2], *q3 = qs[3];
      Batch a0(0.0f), a1(0.0f), c0(0.0f), c1(0.0f), d0(0.0f), d1(0.0f), e0(0.0f), e1(0.0f);
      Batch w0, w1;
      // (On the x pointer and one running offset of the panels' rows, whose
      // width is a constant: no counter, bound or multiply in the loop.)
      int64_t o = 0;
      for (const float *xp = xr, *const xend = xr + k; xp != xend; ++xp, o += kPanelWidth) {
        const Batch xv(*xp);
        Rows::Load(q0 + o, &w0, &w1);
        a0 += xv * w0;
        a1 += xv * w1;
        Rows::Load(q1 + o, &w0, &w1);
        c0 += xv * w0;
        c1 += xv * w1;
        Rows::Load(q2 + o, &w0, &w1);
        d0 += xv * w0;
        d1 += xv * w1;
        Rows::Load(q3 + o, &w0, &w1);
        e0 += xv * w0;
        e1 += xv * w1;
      }
      StorePanel(a0, a1, ps4[0] * nr, cols(ps4[0]), bias, yr);
      StorePanel(c0, c1, ps4[1] * nr, cols(ps4[1]), bias, yr);
      StorePanel(d0, d1, ps4[2] * nr, cols(ps4[2]), bias, yr);
      StorePanel(e0, e1, ps4[3] * nr, cols(ps4[3]), bias, yr);
    }
    for (int64_t p = blocks.rest(); p < p1; ++p) {
      const Elem* q0 = base + p * ps;
      Batch a0(0.0f), a1(0.0f), w0, w1;
      int64_t o = 0;
      for (const float *xp = xr, *const xend = xr + k; xp != xend; ++xp, o += kPanelWidth) {
        const Batch xv(*xp);
        Rows::Load(q0 + o, &w0, &w1);
        a0 += xv * w0;
        a1 += xv * w1;
      }
      StorePanel(a0, a1, p * nr, cols(p), bias, yr);
    }
  }
}

inline void GemvPanelRange(int64_t m, int64_t n, int64_t k, const float* x, int64_t ldx,
                           const PackedB& b, const float* bias, float* y, int64_t ldy,
                           int64_t p0, int64_t p1) {
  if (b.half == nullptr) {
    GemvPanels<FloatRows>(m, n, k, x, ldx, b, bias, y, ldy, p0, p1);
  } else if (b.kind == HalfKind::kF16) {
    GemvPanels<HalfRows<HalfKind::kF16>>(m, n, k, x, ldx, b, bias, y, ldy, p0, p1);
  } else {
    GemvPanels<HalfRows<HalfKind::kBF16>>(m, n, k, x, ldx, b, bias, y, ldy, p0, p1);
  }
}

// SIMD loads need 16-byte aligned panel rows: the packing of this kernel set
// (nr = 2·kWidth) in an aligned buffer.
bool SimdPanels(const PackedB& b) {
  const int64_t elem = b.half != nullptr ? 2 : 4;
  const uintptr_t base = b.half != nullptr ? reinterpret_cast<uintptr_t>(b.half)
                                           : reinterpret_cast<uintptr_t>(b.data);
  const int64_t align = static_cast<int64_t>(sizeof(float)) * kWidth;
  return b.nr == 2 * kWidth && base % static_cast<uintptr_t>(align) == 0 &&
         (b.panel_stride * elem) % align == 0 && (b.nr * elem) % 16 == 0;
}
}  // namespace

// Decoding over weights packed once for the GEMM (PackB, or 16-bit panels):
// the panels are streamed once, in order. Falls back to the generic loop for
// a packing of another width.
void GemvPacked(int64_t m, int64_t n, int64_t k, const float* x, int64_t ldx,
                const PackedB& b, const float* bias, float* y, int64_t ldy) {
  if (!SimdPanels(b)) {
    scalar::GemvPacked(m, n, k, x, ldx, b, bias, y, ldy);
    return;
  }
  const int64_t panels = (n + b.nr - 1) / b.nr;
  const int threads = internal::ThreadsFor(m * n * k, kMinParallelGemv);
  if (threads == 1) {
    GemvPanelRange(m, n, k, x, ldx, b, bias, y, ldy, 0, panels);
    return;
  }
  GemvRanges(panels, 64 / b.nr, threads, [&](int64_t p0, int64_t p1) {
    GemvPanelRange(m, n, k, x, ldx, b, bias, y, ldy, p0, p1);
  });
}
}  // namespace simd
#endif  // ATTNLAB_SIMD

}  // namespace kernels
}  // namespace attnlab

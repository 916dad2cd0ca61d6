// Internal training ops (llm.c style): each layer has one forward and one
// backward function, side by side in one file, over the same activation
// buffers. No validation here (the public entry points in train.h validate);
// functions that need scratch take a Workspace and return false only when
// memory runs out.
//
// Gradient convention: parameter gradients ACCUMULATE (+=) so that a model
// can zero them once per step; input gradients are WRITTEN unless the
// argument says otherwise.
#ifndef ATTNLAB_TRAIN_OPS_H_
#define ATTNLAB_TRAIN_OPS_H_

#include <cstdint>

#include "internal.h"
#include "kernels/kernels.h"
#include "train/train.h"

namespace attnlab {
namespace train {

// Scratch reused by the GEMM wrapper and the attention backward.
struct Workspace {
  internal::AlignedBuffer pack, pack2, trans, tile;
  internal::AlignedBuffer g_ctx, g_q, g_k, g_v;  // MHA backward
  internal::AlignedBuffer g_qn, g_kn;            // MHA backward with qk_norm
};

// ---- matmul.cpp ------------------------------------------------------------
// C[m, n] += A·B on the active kernel set, B already packed: the one switch
// between the SIMD and scalar sets for the training ops (the MHA backward's
// tiles call it too, so both follow UsingScalarKernels() alike).
void GemmAccActive(int64_t m, int64_t n, int64_t k, const float* a,
                   int64_t lda, const kernels::PackedB& b, float* c,
                   int64_t ldc);

// C[m, n] (+)= op(A)·op(B) (+ bias[n]) on the active kernel set (SIMD GEMM,
// or the scalar set beside it).
//   A: [m, k] rows lda apart, or (a_t) stored as [k, m] rows lda apart
//   B: [k, n] rows ldb apart, or (b_t) stored as [n, k] rows ldb apart
bool MatMul(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
            bool a_t, const float* b, int64_t ldb, bool b_t, const float* bias,
            float* c, int64_t ldc, bool accumulate, Workspace* ws);

// ---- linear.cpp ------------------------------------------------------------
// y[R, out] = x[R, in]·Wᵀ + b, W [out, in] (torch), b may be null.
bool LinearForward(int64_t rows, int64_t in, int64_t out, const float* x,
                   const float* w, const float* b, float* y, Workspace* ws);
// The same over a weight packed once (inference models).
void LinearForwardPacked(int64_t rows, int64_t in, int64_t out, const float* x,
                         const kernels::PackedB& w, const float* b, float* y);
// dx (written, or += when accumulate_dx; null: skipped), dw +=, db += (null:
// skipped).
bool LinearBackward(int64_t rows, int64_t in, int64_t out, const float* x,
                    const float* w, const float* dy, float* dx,
                    bool accumulate_dx, float* dw, float* db, Workspace* ws);

// ---- attention_backward.cpp ------------------------------------------------
// Gradients of the attention view's forward. dout is read with the view's
// `out` strides; dq, dk, dv are written with the q, k, v strides.
bool AttentionBackward(const kernels::AttentionView& view, const float* dout,
                       float* dq, float* dk, float* dv, Workspace* ws);

// ---- mha_train.cpp -----------------------------------------------------------
// Activations of one MHA forward, kept for the backward.
struct MhaActivations {
  internal::AlignedBuffer q, k, v, ctx;  // [B, Lq|Lk, H·D | Hkv·D] projections, context
  internal::AlignedBuffer q_pre, k_pre;  // qk_norm: q and k before their norm
};
// Rotary position embedding on Q and K inside the attention (the library's
// rotation, internal::RotateRows, over tables from RotaryCache): cos/sin
// [maxL, R/2]; neg_sin = −sin gives the inverse rotation, which is the
// backward (Rᵀ = R(−θ)). Positions 0..L−1 for queries and keys alike.
struct RopeTables {
  const float* cos = nullptr;
  const float* sin = nullptr;
  const float* neg_sin = nullptr;
  int64_t rotary_dim = 0;  // R, even, <= D; 0 means D
  bool interleaved = false;
};
// kv_heads: GQA/MQA, K and V have Hkv heads of D dims (D = head_dim, or
// E/H; Wk, Wv project to Hkv·D); 0 means H.
// Key/value cache (inference, batch 1, self-attention): the lq new rows sit
// at positions pos0..pos0+lq−1 (RoPE angles and the causal frontier follow);
// their K and V rows are written into k_cache / v_cache [maxL, Hkv·D] at row
// pos0, and the queries attend to cache rows 0..lk−1 (lk = pos0 + lq).
struct MhaShape {
  int64_t batch = 1, lq = 0, lk = 0, e = 0, heads = 1, kdim = 0, vdim = 0;
  const RopeTables* rope = nullptr;  // null: no rotary embedding
  int64_t kv_heads = 0;
  int64_t pos0 = 0;
  float* k_cache = nullptr;  // null: no cache (K, V from all lk key rows)
  float* v_cache = nullptr;
  // With a cache and batch 1: only the last q_last of the lq new rows are
  // queried, so only their output rows are written (from `output`'s row 0);
  // K and V are still projected and cached for all lq. 0: every row.
  int64_t q_last = 0;
  // Inference: the projection weights packed once, by WeightId (null
  // entries, or a null array: MhaParams' torch-layout weights).
  const kernels::PackedB* const* packed = nullptr;
  // The block graph's attention options (defaults: the plain MHA above).
  int64_t head_dim = 0;   // D; 0 is e / heads (q and ctx [.., H·D], Wo [e, H·D])
  float scale = 0.0f;     // the score scale; 0 is 1/√D
  float softcap = 0.0f;   // > 0: scores c·tanh(s/c)
  // qk_norm: RMSNorm over D of each head's q and k (weights [D], eps) after
  // the projections, before RoPE; null: none. Grads (backward) accumulate.
  const float* q_norm = nullptr;
  const float* k_norm = nullptr;
  float norm_eps = 1e-6f;
  float* dq_norm = nullptr;
  float* dk_norm = nullptr;
  // Interpretability: an edit of the heads' z before o_proj (null: none).
  const struct ZEdit* z_edit = nullptr;
  // Cross-attention on a memory projected once (MhaProjectKv): K and V are
  // already in k_cache / v_cache as [B, Lk, Hkv·D], so only Q is projected
  // and nothing is written to the cache (no rope, no qk_norm of K).
  bool kv_ready = false;
  // An additive score bias [H, Lq, Lk] (T5's relative positions), the same
  // for every sequence of the batch; null: none.
  const float* score_bias = nullptr;
};
// K = key·Wkᵀ + bk, V = value·Wvᵀ + bv of `rows` rows into k_out, v_out
// [rows, Hkv·D] (the memory's keys and values of a cross-attention, for
// MhaShape::kv_ready), through the packed weights when there are some.
bool MhaProjectKv(const MhaShape& s, const MhaParams& p, int64_t rows, const float* key,
                  const float* value, float* k_out, float* v_out, Workspace* ws);
// ---- transformer_interp.cpp: edits of a layer's z ----------------------------
// z is a head's attention-weighted sum of V, its D columns of the context rows
// [B·Lq, E] before o_proj. Per head: kKeep; kZero (z = 0); kMean (z = its mean
// over each sequence's queried rows, as this run computed them); kReplace (z
// from `source`, one sequence's rows by position laid out as the context,
// the same for every sequence of the batch: activation patching).
enum class ZEditMode : uint8_t { kKeep = 0, kZero = 1, kMean = 2, kReplace = 3 };
struct ZEdit {
  std::vector<uint8_t> mode;     // [H], or [B, H] (per sequence) ZEditMode; empty: no edit
  const float* source = nullptr;  // kReplace: [L, E], row p for position p (pos0 + row)
};
// Applies `edit` to the context rows of shape s (its batch, lq, e, heads).
void ApplyZEdit(const ZEdit& edit, const MhaShape& s, float* ctx);
// head_enabled: null, or [H] flags (0: the head's context is zeroed).
bool MhaForward(const MhaShape& s, const MhaParams& p, const float* query,
                const float* key, const float* value,
                const kernels::AttentionView& mask_view,
                const uint8_t* head_enabled, float* output, float* weights,
                MhaActivations* act, Workspace* ws);
// d_query / d_key / d_value written; when two of them are the same pointer
// (self-attention) the contributions add up. Parameter grads accumulate.
bool MhaBackward(const MhaShape& s, const MhaParams& p, const float* query,
                 const float* key, const float* value,
                 const kernels::AttentionView& mask_view,
                 const uint8_t* head_enabled, const MhaActivations& act,
                 const float* d_output, float* d_query, float* d_key,
                 float* d_value, const MhaGrads& g, Workspace* ws);

// ---- layer_norm_train.cpp ----------------------------------------------------
// y = LN(x + r)·gamma + beta (the forward kernel of the core).
void ResidualLayerNormForward(int64_t rows, int64_t dim, const float* x,
                              const float* r, const float* gamma,
                              const float* beta, float eps, float* y);
// dz = ∂loss/∂(x + r) (written); dgamma, dbeta accumulate.
void ResidualLayerNormBackward(int64_t rows, int64_t dim, const float* x,
                               const float* r, const float* gamma, float eps,
                               const float* dy, float* dz, float* dgamma,
                               float* dbeta);

// RMSNorm (the core's RmsNorm): y = x·rsqrt(mean(x²) + eps)·w; dx written,
// dw accumulates.
void RmsNormForward(int64_t rows, int64_t dim, const float* x, const float* w,
                    float eps, float* y);
void RmsNormBackward(int64_t rows, int64_t dim, const float* x, const float* w,
                     float eps, const float* dy, float* dx, float* dw);

// ---- elementwise.cpp ---------------------------------------------------------
// GELU(x) = x·Φ(x) (the exact erf form, torch's default).
void GeluForward(int64_t n, const float* x, float* y);
void GeluBackward(int64_t n, const float* x, const float* dy, float* dx);
// GPT-2's gelu_new: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
void GeluTanhForward(int64_t n, const float* x, float* y);
void GeluTanhBackward(int64_t n, const float* x, const float* dy, float* dx);
// SwiGLU: y = SiLU(gate)·up, SiLU(g) = g·σ(g). The backward writes dgate and
// dup (either may alias dy).
void SwiGluForward(int64_t n, const float* gate, const float* up, float* y);
void SwiGluBackward(int64_t n, const float* gate, const float* up,
                    const float* dy, float* dgate, float* dup);
// GeGLU: y = GELU(gate)·up, the exact (erf) GELU or (tanh_form) GPT-2's tanh
// form. The backward writes dgate and dup (either may alias dy).
void GeGluForward(int64_t n, const float* gate, const float* up, bool tanh_form, float* y);
void GeGluBackward(int64_t n, const float* gate, const float* up, bool tanh_form,
                   const float* dy, float* dgate, float* dup);
// ReLU max(x, 0) and SiLU x·σ(x) (non-gated MLPs: T5's relu, Marian's
// swish); the backward writes dx (may alias dy).
void ReluForward(int64_t n, const float* x, float* y);
void ReluBackward(int64_t n, const float* x, const float* dy, float* dx);
void SiluForward(int64_t n, const float* x, float* y);
void SiluBackward(int64_t n, const float* x, const float* dy, float* dx);
// Inverted dropout is linear: the backward applies the same mask to dy.
void DropoutForward(int64_t n, float p, uint32_t seed, float* x);
void DropoutBackward(int64_t n, float p, uint32_t seed, float* dy);
// out[r] = table[tokens[r]] (+ pos[r % L] when pos is non-null).
void EmbeddingForward(int64_t rows, int64_t length, int64_t dim,
                      const float* table, const float* pos,
                      const int32_t* tokens, float* out);
// dtable[tokens[r]] += dy[r]; dpos[r % L] += dy[r] (null: skipped).
void EmbeddingBackward(int64_t rows, int64_t length, int64_t dim,
                       const int32_t* tokens, const float* dy, float* dtable,
                       float* dpos);

// ---- cross_entropy.cpp -------------------------------------------------------
struct CrossEntropyResult {
  double loss = 0, correct = 0, weight = 0;  // Σ mask·ce, Σ[mask>0]·hit, Σ mask
  int64_t counted = 0;                       // rows with mask > 0
  int64_t sequences_right = 0;               // sequences with every counted row right
};
// loss = Σ mask·(-log softmax(logits)[target]) / Σ mask. dlogits (null:
// skipped) = mask·(softmax - onehot)/Σ mask. mask null means all ones.
// Rows are grouped in sequences of `length` for sequences_right.
void CrossEntropyForwardBackward(int64_t rows, int64_t length, int64_t vocab,
                                 const float* logits, const int32_t* targets,
                                 const float* mask, float* dlogits,
                                 CrossEntropyResult* result);

// ---- adamw.cpp -----------------------------------------------------------------
// Global L2 norm of g[n] (in double).
double GlobalNorm(int64_t n, const float* g);
// One AdamW update of p[n] with moments m, v; `step` is 1-based; grad_scale
// multiplies g (clipping); decay[n]: 1 where weight decay applies.
void AdamWUpdate(int64_t n, float* p, const float* g, float* m, float* v,
                 const uint8_t* decay, const AdamWConfig& c, float lr,
                 int64_t step, float grad_scale);

}  // namespace train
}  // namespace attnlab

#endif  // ATTNLAB_TRAIN_OPS_H_

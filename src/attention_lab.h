// attention_lab.h — the public C++ API of attention-lab.
//
// Self-attention, scaled dot-product attention, multi-head attention, a
// self-attention layer (MHA → dropout → residual → LayerNorm) and sinusoidal
// positional encoding, in float32, with SIMD kernels written once on xsimd.
//
// Shape legend used everywhere (comments, names, the JS API, WGSL uniforms):
//   B  batch            H  heads
//   Lq query length     Lk key/value length (L when they are equal)
//   E  embed dim        D  head dim (E = H·D)    Dv value head dim
//
// Conventions:
//   * The library never throws. Every entry point validates its arguments and
//     returns a Status; on failure nothing has been written to the outputs and
//     no memory is held.
//   * All tensors are dense, row-major float32, owned by the caller. Outputs are
//     written into caller-provided buffers of the documented size.
//   * Masks follow the PyTorch and TensorFlow tutorial code:
//       kKeep      mask 0 means "masked": scores = masked_fill(mask == 0, -1e9)
//       kBlock     mask 1 means "masked": scores += mask · (-1e9)
//       kAdditive  scores += mask
//     Causal and padding masks fill with -1e9. A row whose keys are all filled
//     with -1e9 gets uniform weights (1/Lk), never NaN. A row whose scores are
//     all -inf (possible with an additive mask) is also made uniform.
//   * Causal masking is top-left aligned: query i may see keys j <= i, also
//     when Lq != Lk (as torch.nn.functional.scaled_dot_product_attention).
//     With a KvCache it is bottom-right aligned instead: the Lq queries are
//     the newest positions, so query i sees keys j <= Lk_total - Lq + i.
#ifndef ATTENTION_LAB_H_
#define ATTENTION_LAB_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace attnlab {

// ---------------------------------------------------------------------------
// Status

enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument = 1,  // a value is outside what is allowed (RangeError)
  kOutOfMemory = 2,      // the buffers needed exceed kMaxBufferBytes
  kFailedPrecondition = 3,
};

// Result of every fallible call. `message` names the argument, what was given
// and what is allowed.
struct Status {
  StatusCode code = StatusCode::kOk;
  std::string message;

  bool ok() const { return code == StatusCode::kOk; }
  static Status Ok() { return Status{}; }
  static Status Invalid(std::string msg) {
    return Status{StatusCode::kInvalidArgument, std::move(msg)};
  }
  static Status OutOfMemory(std::string msg) {
    return Status{StatusCode::kOutOfMemory, std::move(msg)};
  }
};

// Largest single tensor, in bytes, that any call accepts (1 GiB). Calls whose
// inputs, outputs or scratch would exceed it are refused before allocation.
constexpr int64_t kMaxBufferBytes = int64_t{1} << 30;
// Largest total bytes of scratch + outputs one call may need (1.5 GiB).
constexpr int64_t kMaxCallBytes = int64_t{3} << 29;

// Value written by masked_fill for causal, padding and kKeep masks.
constexpr float kMaskFill = -1e9f;

// Name of the kernel set compiled in: "avx512", "avx2", "sse4.1" (also the wasm
// SIMD128 build), or "scalar".
const char* KernelArch();

// ---------------------------------------------------------------------------
// Masks

enum class MaskKind : int { kNone = 0, kKeep = 1, kBlock = 2, kAdditive = 3 };

// A mask applied to scores of logical shape [B, H, Lq, Lk].
// Any combination of the three parts may be given. The tensor mask is applied
// first; causal and padding then fill with kMaskFill, overriding it.
struct MaskSpec {
  bool causal = false;

  // Padding: key j of batch b is masked when j >= lengths[b]. `lengths` has B
  // entries, each in [0, Lk], or is null.
  const int32_t* lengths = nullptr;

  // An explicit mask tensor read as `kind`. `shape` is the mask's shape
  // right-aligned to [B, H, Lq, Lk]; every entry is 1 (broadcast) or the full
  // size. Accepted forms: [Lq,Lk], [B,1,1,Lk], [B,1,Lq,Lk], [B,H,Lq,Lk], and
  // any other numpy-broadcastable shape of rank <= 4.
  MaskKind kind = MaskKind::kNone;
  const float* data = nullptr;
  int64_t shape[4] = {1, 1, 1, 1};  // [mB, mH, mLq, mLk]
};

// ---------------------------------------------------------------------------
// Positional encoding

// Sinusoidal positional encoding [L, E]:
//   PE(pos, 2i)   = sin(pos / base^(2i/E))
//   PE(pos, 2i+1) = cos(pos / base^(2i/E))
// Any L >= 1 and E >= 1 (for odd E the last column is a sin). `base` > 1
// (the tutorial uses 10000). Angles are computed in double precision.
// out: [L, E].
Status PositionalEncoding(int64_t seq_len, int64_t d_model, double base,
                          float* out);

// ---------------------------------------------------------------------------
// Scaled dot-product attention

// The intermediates of a forward pass (the JS forward(…, { trace: 'values' })):
// each non-null pointer receives one step's values, written by the same call
// that computes the output. Lk is Lk_total with a KV cache.
struct ForwardTrace {
  float* q = nullptr;          // [B, Lq, E] Q = query·W_Q + b_Q (MHA, layer)
  float* k = nullptr;          // [B, Lk, E] K (with a cache: every cached key)
  float* v = nullptr;          // [B, Lk, E] V
  float* scores = nullptr;     // [B, H, Lq, Lk] scaled scores Q·Kᵀ·scale
  float* masked = nullptr;     // [B, H, Lq, Lk] after the mask (masked: -1e9)
  float* weights = nullptr;    // [B, H, Lq, Lk] softmax (never averaged)
  float* context = nullptr;    // [B, Lq, E] weights·V, heads merged (MHA, layer)
  float* attention = nullptr;  // [B, L, E] the layer's output projection
  float* dropout = nullptr;    // [B, L, E] the layer's dropout output
  float* residual = nullptr;   // [B, L, E] x + dropout
};

// Arguments of ScaledDotProductAttention. Tensors are [N, L, D] where N is the
// product of all leading dimensions, viewed as [B, H] (N = B·H) for masks.
struct SdpaArgs {
  int64_t batch = 1;   // B
  int64_t heads = 1;   // H (N = B·H problems)
  int64_t lq = 0;      // Lq
  int64_t lk = 0;      // Lk
  int64_t d = 0;       // D, width of q and k
  int64_t dv = 0;      // Dv, width of v and output
  const float* q = nullptr;  // [B, H, Lq, D]
  const float* k = nullptr;  // [B, H, Lk, D]
  const float* v = nullptr;  // [B, H, Lk, Dv]
  bool has_scale = false;    // false: scale = 1/sqrt(D)
  float scale = 1.0f;
  MaskSpec mask;
  float* output = nullptr;   // [B, H, Lq, Dv]
  float* weights = nullptr;  // optional [B, H, Lq, Lk]
  const ForwardTrace* trace = nullptr;  // optional: scores, masked, weights
};

// softmax(Q·Kᵀ·scale + mask)·V, returning the output and optionally the
// attention weights.
Status ScaledDotProductAttention(const SdpaArgs& args);

// ---------------------------------------------------------------------------
// Multi-head attention

enum class WeightLayout : int {
  kTorch = 0,  // nn.Linear: weight [out, in], y = x·Wᵀ + b
  kKeras = 1,  // Dense: kernel [in, out], y = x·W + b
};

enum class WeightId : int { kWq = 0, kBq, kWk, kBk, kWv, kBv, kWo, kBo };

struct MhaConfig {
  int64_t embed_dim = 0;  // E
  int64_t num_heads = 0;  // H, must divide E
  int64_t kdim = 0;       // width of the key input; 0 means E
  int64_t vdim = 0;       // width of the value input; 0 means E
  bool bias = true;       // Q/K/V/O linear layers have biases
  uint32_t seed = 0;      // seeded Xavier-uniform init; biases start at zero
};

class KvCache;

struct MhaForwardArgs {
  int64_t batch = 1;  // B
  int64_t lq = 0;     // Lq
  int64_t lk = 0;     // Lk (with a cache: the number of new keys)
  const float* query = nullptr;  // [B, Lq, E]
  const float* key = nullptr;    // [B, Lk, kdim]
  const float* value = nullptr;  // [B, Lk, vdim]
  MaskSpec mask;                 // over [B, H, Lq, Lk_total]
  float* output = nullptr;       // [B, Lq, E]
  float* weights = nullptr;      // optional: [B, H, Lq, Lk_total], or
  bool average_weights = false;  //   [B, Lq, Lk_total] averaged over heads
  // Optional, for incremental decoding: the K and V projections of `key` and
  // `value` are appended to the cache, and attention runs over every cached
  // key: Lk_total = cache length before the call + Lk (without a cache,
  // Lk_total = Lk). The cache must come from this layer's CreateKvCache.
  KvCache* cache = nullptr;
  // Optional: q, k, v, scores, masked, weights, context.
  const ForwardTrace* trace = nullptr;
};

// torch.nn.MultiheadAttention-style layer:
//   Q = query·Wq + bq, K = key·Wk + bk, V = value·Wv + bv      [B, L, E]
//   split heads by index arithmetic                          [B, H, L, D]
//   per head softmax(Q_h·K_hᵀ/√D + mask)·V_h                 [B, H, Lq, D]
//   merge heads, output = concat·Wo + bo                     [B, Lq, E]
// Weights are packed for the GEMM kernel when set; scratch buffers are kept
// and reused across calls. Not thread-safe.
class MultiHeadAttention {
 public:
  // Validates `config`; on failure returns null and fills `status`.
  static std::unique_ptr<MultiHeadAttention> Create(const MhaConfig& config,
                                                    Status* status);
  ~MultiHeadAttention();

  const MhaConfig& config() const;
  // Element count of one weight in any layout (0 for an absent bias).
  int64_t WeightSize(WeightId id) const;
  // Shape of a weight in `layout`: {out, in} (torch) or {in, out} (keras), or
  // {out} for a bias.
  std::vector<int64_t> WeightShape(WeightId id, WeightLayout layout) const;
  Status SetWeight(WeightId id, const float* data, WeightLayout layout);
  Status GetWeight(WeightId id, WeightLayout layout, float* out) const;

  Status Forward(const MhaForwardArgs& args);

  // A key/value cache for this layer holding up to `max_length` positions of
  // `batch` sequences (2·B·max_length·E floats). On failure returns null and
  // fills `status`.
  std::unique_ptr<KvCache> CreateKvCache(int64_t batch, int64_t max_length,
                                         Status* status) const;

  // Bytes held by weights and reusable scratch (for leak tests).
  int64_t HeldBytes() const;

 private:
  MultiHeadAttention();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The projected keys and values [B, max_length, E] of every position a
// MultiHeadAttention has seen through MhaForwardArgs::cache, so that a decode
// step projects only its new token. Setting new weights does not clear it.
class KvCache {
 public:
  ~KvCache();
  int64_t batch() const;       // B
  int64_t length() const;      // positions held
  int64_t max_length() const;  // capacity
  // Forgets every position (length 0); keeps the memory.
  void Reset();
  // Keeps the first `length` positions (0 <= length <= length()): rolls back
  // steps, or returns to a shared prefix such as a prompt.
  Status Truncate(int64_t length);
  int64_t HeldBytes() const;

 private:
  friend class MultiHeadAttention;
  KvCache();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// ---------------------------------------------------------------------------
// Layer pieces

// y = LayerNorm(x + residual)·gamma + beta over the last dim (eps default
// 1e-5). `residual` may be null. x, residual, y: [rows, E]; gamma, beta: [E]
// (null means ones / zeros). y may alias x.
Status AddLayerNorm(int64_t rows, int64_t dim, const float* x,
                    const float* residual, const float* gamma,
                    const float* beta, float eps, float* y);

// Inverted dropout in place: each element is kept with probability 1 - p and
// scaled by 1/(1 - p). Element i is dropped when DropoutUniform(seed, i) < p.
// p in [0, 1).
Status Dropout(int64_t n, float p, uint32_t seed, float* x);

// The counter-based uniform in [0, 1) behind Dropout (24-bit resolution):
//   h = pcg(seed ^ pcg(i)), u = (h >> 8) / 2^24,
//   pcg(x): s = x·747796405 + 2891336453; w = ((s >> ((s >> 28) + 4)) ^ s)·277803737;
//           return (w >> 22) ^ w   (all uint32 arithmetic)
// The same function is implemented in the WebGPU shaders.
float DropoutUniform(uint32_t seed, uint32_t i);

// ---------------------------------------------------------------------------
// Self-attention layer (tutorial 1, step 5)

struct LayerConfig {
  MhaConfig mha;
  float dropout = 0.1f;  // p in [0, 1)
  float eps = 1e-5f;     // LayerNorm epsilon
};

struct LayerForwardArgs {
  int64_t batch = 1;             // B
  int64_t seq_len = 0;           // L
  const float* x = nullptr;      // [B, L, E]
  MaskSpec mask;                 // over [B, H, L, L]
  bool training = false;         // dropout only when training
  uint32_t dropout_seed = 0;     // seed of this call's dropout mask
  float* output = nullptr;       // [B, L, E]
  float* weights = nullptr;      // optional [B, H, L, L] (or [B, L, L])
  bool average_weights = false;
  // Optional: every field (the MHA's, then attention, dropout, residual).
  const ForwardTrace* trace = nullptr;
};

// y = LayerNorm(x + Dropout(MHA(x, x, x))).
class SelfAttentionLayer {
 public:
  static std::unique_ptr<SelfAttentionLayer> Create(const LayerConfig& config,
                                                    Status* status);
  ~SelfAttentionLayer();

  MultiHeadAttention& mha();
  const LayerConfig& config() const;
  // gamma / beta: [E]. Null pointer resets to ones / zeros.
  Status SetNorm(const float* gamma, const float* beta);
  Status GetNorm(float* gamma, float* beta) const;
  Status Forward(const LayerForwardArgs& args);
  int64_t HeldBytes() const;

 private:
  SelfAttentionLayer();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace attnlab

#endif  // ATTENTION_LAB_H_

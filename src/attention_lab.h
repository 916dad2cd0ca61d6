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
//     Causal, padding and window masks fill with MaskSpec::fill (-1e9 by
//     default). With a finite fill, a row whose keys are all filled gets
//     uniform weights (1/Lk), never NaN, and so does a row whose scores are
//     all -inf. With fill = -inf (ONNX, PyTorch boolean masks) a row with no
//     finite score gets zero weights and a zero output row, never NaN.
//   * Order of the score pipeline (ONNX Attention, Gemma 2):
//       s = q·kᵀ·scale → softcap c·tanh(s/c) → tensor mask → ALiBi bias →
//       causal / padding / window fill → softmax.
//   * Causal masking is top-left aligned by default: query i may see keys
//     j <= i, also when Lq != Lk (as torch.nn.functional.scaled_dot_product_
//     attention). Bottom-right alignment puts the last query on the last
//     valid key: query i sees keys j <= i + (len_b - Lq), len_b = lengths[b]
//     (or Lk). With a KvCache the default is bottom-right over the cache:
//     query i sees keys j <= Lk_total - Lq + i.
//   * GQA/MQA: k and v may have Hkv heads with H % Hkv == 0; query head h
//     reads kv head floor(h·Hkv/H). K and V are never copied per query head.
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

// Default value written by masked_fill for causal, padding, window and kKeep
// masks (MaskSpec::fill).
constexpr float kMaskFill = -1e9f;

// Name of the kernel set compiled in: "avx512", "avx2", "sse4.1" (also the wasm
// SIMD128 build), or "scalar".
const char* KernelArch();

// ---------------------------------------------------------------------------
// Masks

enum class MaskKind : int { kNone = 0, kKeep = 1, kBlock = 2, kAdditive = 3 };

// Where query i of Lq sits among the keys (for causal, window and ALiBi):
//   kTopLeft      position p_i = i
//   kBottomRight  position p_i = i + len_b - Lq (len_b = lengths[b] or Lk):
//                 the last query is the newest key
enum class Align : int { kTopLeft = 0, kBottomRight = 1 };

// A mask applied to scores of logical shape [B, H, Lq, Lk].
// Any combination of the parts may be given. The tensor mask and the ALiBi
// bias are applied first; causal, padding and window then fill with `fill`,
// overriding them.
struct MaskSpec {
  bool causal = false;
  Align causal_align = Align::kTopLeft;
  // kTopLeft only: query i sits at p_i = i + causal_offset (ONNX's offset =
  // the past length of a KV cache).
  int64_t causal_offset = 0;

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

  // Sliding window: query i sees keys j with p_i - left <= j <= p_i + right
  // (p_i from window_align); -1 leaves that side unbounded.
  bool window = false;
  int64_t window_left = -1;
  int64_t window_right = -1;
  Align window_align = Align::kTopLeft;
  int64_t window_offset = 0;  // as causal_offset, for the window

  // ALiBi: scores += -slopes[h]·|p_i - j| (p_i from causal_align), which is
  // the paper's m·(j - i) on the causal part. `alibi_slopes` has H entries or
  // is null for AlibiSlopes(H).
  bool alibi = false;
  const float* alibi_slopes = nullptr;

  // Value of masked scores: finite (default -1e9) or -infinity.
  float fill = kMaskFill;
};

// The ALiBi paper's slopes for H heads: 2^(-8(h+1)/H) when H is a power of
// two; otherwise the slopes of the nearest lower power of two n followed by
// every other slope of 2n (2^(-4(2k+1)/n), k < H - n), as the paper's code
// does. out: [H].
Status AlibiSlopes(int64_t heads, float* out);

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
// Rotary position embedding (ONNX RotaryEmbedding, RoFormer)

// With R = rotary_dim and pairs (x1_i, x2_i), i < R/2, taken as the halves
// [0, R/2) and [R/2, R) of each head's first R dims (interleaved: dims 2i and
// 2i+1):
//   x1' = cos_i(p)·x1 - sin_i(p)·x2,   x2' = sin_i(p)·x1 + cos_i(p)·x2
// dims [R, D) pass through unchanged. The angles are p·base^(-2i/R) unless
// cos/sin tables are given.
struct RotaryArgs {
  int64_t batch = 1;     // B
  int64_t heads = 1;     // H
  int64_t seq_len = 0;   // L
  int64_t head_dim = 0;  // D
  // false: x [B, H, L, D]; true: x [B, L, H·D] (ONNX 3-D input, numHeads).
  bool seq_major = false;
  int64_t rotary_dim = 0;  // R: even, 2 <= R <= D; 0 means D
  bool interleaved = false;
  const float* x = nullptr;
  float* out = nullptr;  // same shape as x; may alias x
  // Optional position of each token, [B, L]: the rows of cos/sin to read
  // (each in [0, max_position)); without tables, the angle's position.
  // Null: positions 0..L-1.
  const int32_t* position_ids = nullptr;
  // Optional tables, both or neither: [max_position, R/2] read at
  // position_ids, or [B, L, R/2] when position_ids is null.
  const float* cos = nullptr;
  const float* sin = nullptr;
  int64_t max_position = 0;  // rows of the tables when position_ids is set
  double base = 10000.0;     // > 1, for computed angles
};
Status RotaryEmbedding(const RotaryArgs& args);

// cos/sin tables [max_position, rotary_dim/2] of angle p·base^(-2i/R),
// computed in double precision. rotary_dim even >= 2, base > 1.
Status RotaryCache(int64_t max_position, int64_t rotary_dim, double base,
                   float* cos, float* sin);

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
  float* masked = nullptr;     // [B, H, Lq, Lk] after the mask (masked: fill)
  float* weights = nullptr;    // [B, H, Lq, Lk] softmax (never averaged)
  float* context = nullptr;    // [B, Lq, E] weights·V, heads merged (MHA, layer)
  float* attention = nullptr;  // [B, L, E] the layer's output projection
  float* dropout = nullptr;    // [B, L, E] the layer's dropout output
  float* residual = nullptr;   // [B, L, E] x + dropout
  float* capped = nullptr;     // [B, H, Lq, Lk] after softcap (SDPA with softcap)
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
  const float* k = nullptr;  // [B, Hkv, Lk, D]
  const float* v = nullptr;  // [B, Hkv, Lk, Dv]
  bool has_scale = false;    // false: scale = 1/sqrt(D)
  float scale = 1.0f;
  // GQA/MQA: k and v have kv_heads (Hkv) heads, H % Hkv == 0; 0 means H.
  int64_t kv_heads = 0;
  // Soft-capping of the scaled scores: s = softcap·tanh(s / softcap), > 0.
  bool has_softcap = false;
  float softcap = 0.0f;
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
  // GQA/MQA: K and V have num_kv_heads (Hkv) heads of D = E/H dims; Wk and Wv
  // project to Hkv·D and a KvCache holds Hkv heads. 0 means H.
  int64_t num_kv_heads = 0;
  // Rotary embedding of Q and K after the projection (not interleaved unless
  // asked), positions 0..L-1, or continuing from the cache length.
  bool rope = false;
  double rope_base = 10000.0;
  int64_t rope_dim = 0;  // R, even, <= D; 0 means D
  bool rope_interleaved = false;
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
  // Threads: return once the output projection's tasks are handed to the
  // workers; JoinTasks() (thread_pool.h) must follow before `output` is read
  // or anything else runs. Lets a JS caller allocate the result meanwhile.
  bool start_output_only = false;
};

// torch.nn.MultiheadAttention-style layer:
//   Q = query·Wq + bq [B, Lq, E]; K = key·Wk + bk, V = value·Wv + bv
//   [B, Lk, Hkv·D] (Hkv = num_kv_heads, E = H·D)
//   optional RoPE on Q and K (positions continue from a cache's length)
//   split heads by index arithmetic             [B, H, L, D], [B, Hkv, L, D]
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
  // `batch` sequences (2·B·max_length·Hkv·D floats). On failure returns null and
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

// The projected keys and values [B, max_length, Hkv·D] of every position a
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

// A linear layer, as torch.nn.Linear or a Keras Dense:
//   y[R, N] = x[R, K]·Wᵀ + b   (layout kTorch: weight [N, K], torch's [out, in])
//   y[R, N] = x[R, K]·W + b    (layout kKeras: weight [K, N], a Keras Dense
//                               kernel and GPT-2's Conv1D, [in, out])
// x: [R, K] (R: every leading dim multiplied); bias: [N] or null. The models'
// projections (Q = X·W_Q, the MLP, the LM head) run through the same
// driver: a GEMV for a few rows, else the packed GEMM.
struct LinearArgs {
  int64_t rows = 0;  // R
  int64_t in = 0;    // K
  int64_t out = 0;   // N
  const float* x = nullptr;
  const float* weight = nullptr;
  const float* bias = nullptr;
  WeightLayout layout = WeightLayout::kTorch;
  float* y = nullptr;  // [R, N]; must not alias x
};
Status Linear(const LinearArgs& args);

// RMSNorm over the last dim (Llama's pre-norm; per-head QK-norm):
//   y[r, i] = x[r, i] / sqrt(mean_i x[r, i]^2 + eps) · weight[i]
// x, y: [rows, E] (rows: every leading dim multiplied); weight: [E] (null
// means ones); eps > 0 (default 1e-5, as ONNX RMSNormalization). y may
// alias x.
struct RmsNormArgs {
  int64_t rows = 0;  // product of the leading dims
  int64_t dim = 0;   // E
  const float* x = nullptr;
  const float* weight = nullptr;
  double eps = 1e-5;
  float* y = nullptr;
};
Status RmsNorm(const RmsNormArgs& args);

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

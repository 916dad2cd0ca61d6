// train.h — training in the attention-lab core: backward passes, AdamW and
// the one block graph of every model (from the training chapter's tiny
// post-LN default to whole checkpoints such as GPT-2 small), whose whole
// training step (forward, backward, optimizer) is one call.
//
// Shape legend as in attention_lab.h (B, H, Lq/Lk/L, E, D, Dv), plus
//   V  vocabulary size     F  feed-forward width     R  rows = B·L
//
// Conventions (as in the rest of the core):
//   * Exception-free: every entry point validates first and returns a Status;
//     on failure no output has been written.
//   * Weights are in torch layout: Linear weight [out, in], y = x·Wᵀ + b.
//   * Gradients are written (not accumulated) into caller buffers.
//   * Backward passes recompute what they need from the inputs; the SDPA
//     backward recomputes the attention weights a tile of query rows at a time
//     with the forward's own kernel, so it never holds a [Lq, Lk] buffer per
//     head beyond one tile (the flash-style backward).
#ifndef ATTNLAB_TRAIN_TRAIN_H_
#define ATTNLAB_TRAIN_TRAIN_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "attention_lab.h"

namespace attnlab {

// ---------------------------------------------------------------------------
// Scaled dot-product attention backward

struct SdpaBackwardArgs {
  // The forward's arguments (shapes, q, k, v, scale, mask). `forward.output`
  // and `forward.weights` are optional outputs of the recomputed forward.
  SdpaArgs forward;
  const float* d_output = nullptr;  // [B, H, Lq, Dv]
  float* dq = nullptr;              // [B, H, Lq, D]
  float* dk = nullptr;              // [B, H, Lk, D]
  float* dv = nullptr;              // [B, H, Lk, Dv]
};

// Gradients of softmax(mask(softcap(q·kᵀ·scale)))·v with respect to q, k
// and v, for every option of the forward: GQA/MQA (dk, dv of a kv head sum
// over its query heads), softcap (chain rule through c·tanh(x/c)), causal and
// window masks with either alignment and offsets, padding, tensor masks,
// ALiBi and the fill. Scores replaced by the fill (causal, padding, window,
// keep-mask zeros) or −∞ are constants: no gradient flows through them; a
// row whose every key is replaced (uniform weights with a finite fill, zeros
// with −∞) passes gradient only to v, never NaN.
Status ScaledDotProductAttentionBackward(const SdpaBackwardArgs& args);

// ---------------------------------------------------------------------------
// Multi-head attention backward (functional: the weights are passed in)

// The eight MHA weights in torch layout, indexed by WeightId:
//   wq [E, E], wk [E, kdim], wv [E, vdim], wo [E, E], biases [E] (null when
//   the config has no biases).
struct MhaParams {
  const float* w[8] = {};
};
struct MhaGrads {
  float* w[8] = {};  // same shapes as MhaParams; written
};

struct MhaBackwardArgs {
  MhaConfig config;  // embed_dim, num_heads, kdim, vdim, bias (seed unused)
  MhaParams params;
  int64_t batch = 1, lq = 0, lk = 0;
  const float* query = nullptr;  // [B, Lq, E]
  const float* key = nullptr;    // [B, Lk, kdim]
  const float* value = nullptr;  // [B, Lk, vdim]
  MaskSpec mask;                 // over [B, H, Lq, Lk]
  const float* d_output = nullptr;  // [B, Lq, E]
  float* output = nullptr;          // optional: the forward output [B, Lq, E]
  float* d_query = nullptr;         // [B, Lq, E]
  float* d_key = nullptr;           // [B, Lk, kdim]
  float* d_value = nullptr;         // [B, Lk, vdim]
  MhaGrads grads;
};

Status MultiHeadAttentionBackward(const MhaBackwardArgs& args);

// Self-attention layer backward: y = LayerNorm(x + Dropout(MHA(x, x, x))).
struct LayerBackwardArgs {
  MhaConfig config;
  MhaParams params;
  const float* gamma = nullptr;  // [E]
  const float* beta = nullptr;   // [E]
  float eps = 1e-5f;
  float dropout = 0.0f;          // p in [0, 1), applied when training
  bool training = false;
  uint32_t dropout_seed = 0;
  int64_t batch = 1, seq_len = 0;
  const float* x = nullptr;         // [B, L, E]
  MaskSpec mask;                    // over [B, H, L, L]
  const float* d_output = nullptr;  // [B, L, E]
  float* output = nullptr;          // optional forward output [B, L, E]
  float* dx = nullptr;              // [B, L, E]
  MhaGrads grads;
  float* d_gamma = nullptr;         // [E]
  float* d_beta = nullptr;          // [E]
};

Status SelfAttentionLayerBackward(const LayerBackwardArgs& args);

// ---------------------------------------------------------------------------
// The block graph (Transformer)

// kRope: rotary embedding of Q and K in every block's attention (RoFormer,
// halves pairing, all D dims or the first rotary_dim, base rope_theta (local
// layers: rope_local_theta), positions 0..L−1; the rotated dims even);
// nothing is added to the token embedding.
enum class Positional : int { kNone = 0, kSinusoidal = 1, kLearned = 2, kRope = 3 };

enum class NormKind : int { kLayerNorm = 0, kRmsNorm = 1 };
// kGelu: x·Φ(x) (erf, torch's default, BERT's "gelu"); kGeluTanh: GPT-2's
// "gelu_new", 0.5x(1 + tanh(√(2/π)(x + 0.044715x³))); kSwiGlu: Llama's MLP,
// W2·(SiLU(Wg·x) ⊙ W1·x).
// kGeGlu / kGeGluTanh: W2·(GELU(Wg·x) ⊙ W1·x) with the exact (erf) or the
// tanh GELU of the gate (Gemma's gelu_pytorch_tanh); like kSwiGlu they use
// ffn.wg (the gate) and ffn.w1 (up).
// kRelu / kSilu: W2·act(W1·x) with ReLU (T5's original "relu") or SiLU
// (Marian's "swish").
enum class Activation : int { kGelu = 0, kGeluTanh = 1, kSwiGlu = 2, kGeGlu = 3, kGeGluTanh = 4, kRelu = 5, kSilu = 6 };

// One block graph for every model the library runs or trains (the
// architecture tables of web/lib/model/ map GPT-2, Llama and BERT onto it):
//   embeddings  x0 = Emb[tokens] (+ Pos[p]) (+ Type[0]); BERT: LN(x0)
//   post-norm   (prenorm false; the default, BERT)
//               h = Norm1(x + Drop(MHA(x)));  x' = Norm2(h + Drop(MLP(h)))
//   pre-norm    (GPT-2, Llama)
//               h = x + Drop(MHA(Norm1(x)));  x' = h + Drop(MLP(Norm2(h)))
//               and a final norm after the last block
//   cross_attention (the decoder of an encoder-decoder): between the
//               self-attention and the MLP each block reads the memory
//               (SetMemory: the encoder's output) through a second MHA,
//               queries from the block, keys and values from the memory:
//               post-norm c = NormX(h + XMHA(h, mem));  pre-norm
//               c = h + XMHA(NormX(h), mem); the MLP then reads c
//   head        logits = x_N·Whᵀ (+ bh); Wh is Emb when tie_embeddings;
//               BERT's MLM head first maps x_N through LN(GELU(Wt·x + bt))
// The defaults are the tiny post-LN transformer of the training chapter.
// Every field of TransformerConfig, listed once: the struct below, the
// Embind bag of bindings/ (its JS names) and transformerConfigDefaults() are
// all expanded from this list, so a new flag of the block graph is one line
// here. X(type, field, jsName, default, doc). The enums go to JS as their
// ids. Notes that do not fit a doc string:
//   init_std      > 0: GPT-2's init, normal(0, std) with the residual
//                 projections at std/√(2N); 0: the default init.
//   init_weights  false: weights start at zero, a checkpoint is written over
//                 them (WriteParam).
//   packed_weights  inference only (no Step): the projection weights are held
//                 packed for the GEMM once instead of packed on every call;
//                 written with WriteParam, read with CopyParams.
//   sliding_window  causal: query i (its absolute position) sees keys
//                 i − W < j <= i; bidirectional (causal false): |i − j| < W
//                 (ModernBERT's |i − j| <= local_attention // 2 is W =
//                 local_attention // 2 + 1).
//   norm_bias     false: the LayerNorms (embed_norm, norm1, norm2, the
//                 sandwich norms, final_norm, mlm.norm) have no bias
//                 (ModernBERT's norm_bias); RMSNorm never has one.
//   first_norm1   false (pre-norm): block 0 attends to x itself, no
//                 blocks.0.norm1 (ModernBERT's nn.Identity attn_norm; its
//                 embedding norm already normalises x).
//   gate_bias     a GLU MLP's gate Wg·x + bg (ModernBERT's Wi bias with
//                 mlp_bias: its first half).
//   relative_buckets  > 0: T5's relative position bias, a table [buckets,
//                 H] (rel_bias.weight) read by bucket of (key − query)
//                 position (bidirectional unless causal; exact below half
//                 the buckets' range, log-spaced up to relative_max_distance)
//                 and added to every self-attention layer's scores.
//   packed_half   with packed_weights, 1 (F16) or 2 (BF16) keeps the packed
//                 projections in 16 bits as a checkpoint holds them
//                 (WriteParamHalf): half the bytes a decoding step reads, the
//                 same results as their float32 conversion.
#define ATTNLAB_TRANSFORMER_CONFIG_FIELDS(X)                                    \
  X(int64_t, vocab_size, vocabSize, 0, "V")                                     \
  X(int64_t, max_length, maxLength, 0, "longest sequence L")                    \
  X(int64_t, embed_dim, embedDim, 0, "E")                                       \
  X(int64_t, num_heads, numHeads, 0, "H, divides E (unless head_dim)")         \
  X(int64_t, num_layers, numLayers, 1, "N")                                     \
  X(int64_t, ffn_dim, ffnDim, 0, "F")                                           \
  X(bool, causal, causal, false, "causal self-attention")                       \
  X(::attnlab::Positional, positional, positional, ::attnlab::Positional::kSinusoidal, "positions")   \
  X(float, dropout, dropout, 0.0f, "on the attention and the FFN output")       \
  X(float, eps, eps, 1e-5f, "LayerNorm / RMSNorm epsilon")                      \
  X(uint32_t, seed, seed, 0, "weights and dropout masks")                       \
  X(int64_t, num_kv_heads, numKvHeads, 0, "Hkv (GQA/MQA), divides H; 0 is H")   \
  X(bool, prenorm, prenorm, false, "pre-norm blocks and a final norm")          \
  X(::attnlab::NormKind, norm, norm, ::attnlab::NormKind::kLayerNorm, "norm of every block")          \
  X(::attnlab::Activation, activation, activation, ::attnlab::Activation::kGelu, "MLP activation")    \
  X(bool, qkv_bias, qkvBias, true, "biases of the Q, K and V projections")      \
  X(bool, out_bias, outBias, true, "bias of the attention output projection")   \
  X(bool, ffn_bias, ffnBias, true, "biases of the MLP")                         \
  X(bool, tie_embeddings, tieEmbeddings, false, "the LM head is Emb")           \
  X(bool, head_bias, headBias, true, "head.bias [V]")                           \
  X(bool, has_head, hasHead, true, "false: no logits (an encoder)")             \
  X(double, rope_theta, ropeTheta, 10000.0, "RoPE base (kRope)")                \
  X(int64_t, type_vocab, typeVocab, 0, "> 0: token types [T, E], row 0 added")  \
  X(bool, embed_norm, embedNorm, false, "LayerNorm after the embeddings")       \
  X(bool, mlm_head, mlmHead, false, "BERT's MLM transform before the head")     \
  X(float, init_std, initStd, 0.0f, "GPT-2's init std (see above)")             \
  X(bool, init_weights, initWeights, true, "false: zero weights (see above)")   \
  X(bool, packed_weights, packedWeights, false, "inference only (see above)")   \
  X(int32_t, packed_half, packedHalf, 0, "0, 1 (F16) or 2 (BF16) (see above)")   \
  X(int64_t, head_dim, headDim, 0, "D; 0 is E/H (see above)")                   \
  X(bool, qk_norm, qkNorm, false, "RMSNorm of each head's q and k")             \
  X(float, attn_scale, attnScale, 0.0f, "score scale; 0 is 1/sqrt(D)")          \
  X(float, attn_softcap, attnSoftcap, 0.0f, "> 0: scores c·tanh(s/c)")          \
  X(float, final_softcap, finalSoftcap, 0.0f, "> 0: logits c·tanh(z/c)")        \
  X(int64_t, sliding_window, slidingWindow, 0, "> 0: local layers' window (see above)") \
  X(std::string, layer_kinds, layerKinds, "", "'g'/'l' a layer (see above)")    \
  X(double, rope_local_theta, ropeLocalTheta, 0.0, "local layers' RoPE base; 0 is ropeTheta") \
  X(int64_t, rotary_dim, rotaryDim, 0, "R: RoPE on the first R dims; 0 is D")   \
  X(bool, parallel_residual, parallelResidual, false, "x + MHA(N1(x)) + MLP(N2(x))") \
  X(bool, sandwich_norm, sandwichNorm, false, "post-attention and post-FFN norms") \
  X(float, embed_scale, embedScale, 1.0f, "x0 = Emb[tokens]·embedScale")       \
  X(bool, norm_bias, normBias, true, "false: every LayerNorm without its bias")  \
  X(bool, first_norm1, firstNorm1, true, "false: block 0's norm1 is the identity") \
  X(bool, mlm_bias, mlmBias, true, "mlm.dense.bias (mlmHead)")                  \
  X(bool, gate_bias, gateBias, false, "ffn.bg [F], the gate's bias (GLU MLPs)") \
  X(bool, cross_attention, crossAttention, false, "cross-attention on the memory (see above)") \
  X(bool, sinusoid_halves, sinusoidHalves, false, "sinusoidal: sin | cos halves (Marian)") \
  X(int64_t, relative_buckets, relativeBuckets, 0, "> 0: T5's position bias (see above)") \
  X(int64_t, relative_max_distance, relativeMaxDistance, 128, "T5's max distance of the buckets") \
  X(float, head_scale, headScale, 1.0f, "logits = (xf·headScale)·Whᵀ (T5's tied head)")

struct TransformerConfig {
#define ATTNLAB_CONFIG_MEMBER(type, field, js, def, doc) type field = def;
  ATTNLAB_TRANSFORMER_CONFIG_FIELDS(ATTNLAB_CONFIG_MEMBER)
#undef ATTNLAB_CONFIG_MEMBER
};

// AdamW (decoupled weight decay, as torch.optim.AdamW) with a linear warmup
// of the learning rate over `warmup` steps and clipping of the global L2
// norm of all gradients to `clip` (0: no clipping). Weight decay applies to
// the weight matrices and embeddings, not to biases and LayerNorm.
struct AdamWConfig {
  float lr = 1e-3f;
  float beta1 = 0.9f, beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.01f;
  int64_t warmup = 0;
  float clip = 1.0f;
};

struct StepResult {
  double loss = 0;               // mean cross-entropy over positions with mask > 0
  double accuracy = 0;           // share of those positions predicted right
  double sequence_accuracy = 0;  // share of sequences with all of them right
  double grad_norm = 0;          // global gradient norm before clipping
  double lr = 0;                 // learning rate used (after warmup)
  int64_t step = 0;              // optimizer steps taken so far
};

// One named parameter tensor of the model, in the flat parameter vector.
struct ParamInfo {
  std::string name;            // e.g. "blocks.0.attn.wq"
  std::vector<int64_t> shape;  // torch layout
  int64_t offset = 0;          // first float in the flat vector
  bool decay = false;          // AdamW weight decay applies
  bool packed = false;         // held packed for the GEMM (packed_weights)
};

// The block graph of TransformerConfig, trained (Step) or run (Forward,
// Extend). Parameter names (params()): embed.weight [V, E], pos.weight
// [maxL, E], type.weight [T, E], embed_norm.{weight,bias}, per block
// blocks.N.attn.{wq,bq,wk,bk,wv,bv,wo,bo} (wq [H·D, E], wk, wv [Hkv·D, E],
// wo [E, H·D]), blocks.N.norm1.{weight,bias}, blocks.N.ffn.{w1,b1,wg,bg,w2,b2}
// (wg: the SwiGLU / GeGLU gate), blocks.N.norm2.{weight,bias},
// blocks.N.attn.{q_norm,k_norm}.weight [D] (qk_norm),
// blocks.N.{post_attn_norm,post_ffn_norm}.{weight,bias} (sandwich_norm),
// blocks.N.xattn.{wq,bq,wk,bk,wv,bv,wo,bo} and blocks.N.norm_x.{weight,bias}
// (cross_attention), rel_bias.weight [buckets, H] (relative_buckets),
// final_norm.{weight,bias},
// mlm.dense.{weight,bias}, mlm.norm.{weight,bias}, head.weight [V, E],
// head.bias [V]; each only when the config has it (RMSNorm has no bias).
// Tokens are int32 in [0, V), targets likewise; a loss mask (float, >= 0)
// weighs each position's loss (null: all 1). Not thread-safe.
class Transformer {
 public:
  static std::unique_ptr<Transformer> Create(const TransformerConfig& config,
                                             Status* status);
  ~Transformer();

  const TransformerConfig& config() const;
  const std::vector<ParamInfo>& params() const;
  int64_t ParamCount() const;
  // The flat parameter vector (ParamCount() floats).
  const float* Params() const;
  // The gradient of the last Step (before clipping), same layout; null
  // before the first Step or ConfigureOptimizer.
  const float* Gradients() const;
  Status SetParams(const float* data);
  // After a checkpoint is written (WriteParam, WriteParamHalf): checks that
  // every value is finite. Params() is the flat layout only without
  // packed_weights; CopyParams works for both.
  Status CheckParams() const;
  // All parameters in the flat layout of params() (ParamCount() floats).
  void CopyParams(float* out) const;
  // Writes rows [first, first + rows) of parameter `index` (its shape as
  // [R, C], a vector as [1, n]) from src (rows × C, rows ld apart); with
  // `transposed`, src holds rows [first, first + rows) of the transposed
  // [C, R] matrix instead (Conv1D / Keras [in, out] weights).
  Status WriteParam(int64_t index, int64_t first, int64_t rows, const float* src,
                    int64_t ld, bool transposed);
  // The same from 16-bit values (kind 1: F16, 2: BF16): kept as they are in
  // the packed projections of a packed_half model of that kind, converted
  // to float32 (exactly) everywhere else. Inf or NaN is refused.
  Status WriteParamHalf(int64_t index, int64_t first, int64_t rows, const uint16_t* src,
                        int64_t ld, bool transposed, int32_t kind);
  // The same from GGML blocks (kind: the ggml type id, 8 Q8_0, 2 Q4_0, 12 Q4_K, 14 Q6_K):
  // rows [first, first + rows) of [R, C] as a GGUF file holds them, C / 32
  // blocks a row, `bytes` = rows · C / 32 · (34 or 18) (the K-quants: C / 256
  // super-blocks of 144 or 210). A packed projection of a packed_weights
  // model keeps them as they are (GEMV and GEMM read the blocks; every row of
  // one kind), and so does its token embedding (a row table); any other parameter is dequantized into
  // its floats (ggml's dequantize_row_*). Non-finite scales are refused.
  Status WriteParamQuant(int64_t index, int64_t first, int64_t rows, int32_t kind,
                         const uint8_t* src, int64_t bytes);

  // Heads switched off (ablated) contribute zeros to their layer's context.
  Status SetHeadEnabled(int64_t layer, int64_t head, bool enabled);

  // logits: [B, L, V] (null when the model has no head); attention:
  // optional, N·[B, H, L, L] (layer-major); hidden: optional [B, L, E], the
  // last block's output after the final norm; cross (cross_attention):
  // optional, N·[B, H, L, Le] the weights over the memory.
  Status Forward(int64_t batch, int64_t length, const int32_t* tokens,
                 float* logits, float* attention, float* hidden = nullptr,
                 float* cross = nullptr);

  // cross_attention: the memory [B, Le, E] (the encoder's output) that every
  // later Forward and Extend of that batch reads. Each layer's cross keys
  // and values are projected here once ([B, Le, Hkv·D] a layer) and kept,
  // so decoding step by step projects none again. Refused without
  // cross_attention; Forward and Extend are refused until it is set.
  Status SetMemory(int64_t batch, int64_t length, const float* memory);
  // Rows of the memory set (0: none).
  int64_t MemoryLength() const;

  // Inference with a key/value cache, batch 1 (generation). Keeps the first
  // `keep` cached positions (keep <= Cached(); 0 starts afresh), runs
  // `length` tokens at positions keep..keep+length−1 against them and caches
  // those too. logits: [length, V], or [V] of the last token when
  // last_only; attention: optional N·[H, length, keep+length]; hidden:
  // optional [length, E]. Dropout off; the head switches apply.
  Status Extend(int64_t keep, int64_t length, const int32_t* tokens,
                bool last_only, float* logits, float* attention,
                float* hidden, float* cross = nullptr);
  // Positions held in the key/value cache.
  int64_t Cached() const;
  // After Forward or Extend: the input of every block, [N, rows, E] (rows =
  // B·L, or Extend's new positions): block 0's is the embeddings (after
  // BERT's embedding norm), block l's the output of block l − 1. With
  // `hidden`, these are transformers' output_hidden_states.
  void LayerInputs(float* out) const;

  // ---- Interpretability (transformer_interp.cpp; docs/interpretability.md,
  // after TransformerLens). z: a head's attention-weighted sum of V, before
  // o_proj. The residual x_l: block l's input (x_0 the embeddings, x_N the
  // last block's output). LD = logit[target] − logit[baseline].
  //
  // Ablations applied by every later Forward and Extend (not Step) until
  // set again: `count` (layer, head, mode) triples, mode 1 zero (z = 0) or
  // 2 mean (z = its mean over the call's queried positions of each
  // sequence, in the ablated run). Several entries of one head: the last
  // wins. count 0 clears them. The key/value cache is dropped when they
  // change. LogitLens, Attribute and Patch run without them.
  Status SetAblations(int64_t count, const int32_t* layer_head_mode);
  // The following need a pre-norm model with an LM head (no MLM head): on a
  // post-norm model the residual passes through a norm in every block, so
  // no residual is a sum of the parts or a stage of the prediction. Batch 1.
  //
  // Logit lens: for r = 0..N, the head applied to FinalNorm(x_r), the norm's
  // scale computed from x_r itself (TransformerLens accumulated_resid with
  // apply_ln). top_ids / top_probs [N + 1, L, k]: the k most likely ids
  // (softmax over V; ties: the lower id first); logits: optional
  // [N + 1, L, V]. Row N is Forward's logits.
  Status LogitLens(int64_t length, const int32_t* tokens, int64_t k, int32_t* top_ids,
                   float* top_probs, float* logits);
  // Direct logit attribution of LD at `position`, the final norm's scale
  // frozen at its value on x_N there (TransformerLens decompose_resid +
  // logit_attrs, plus `constant`). out [N·H + 2N + 3]: embed, heads
  // [N, H] (each head's z·W_Oᵀ for its columns, no bias), attn_bias [N],
  // mlps [N], constant (the final norm's bias and the head's bias), then LD
  // itself from the logits (before a final softcap, which is not linear).
  // The parts sum to LD. baseline −1: logit[target]. Refused with sandwich
  // norms (each output is normalised before the residual: not a sum).
  Status Attribute(int64_t length, const int32_t* tokens, int64_t position, int32_t target,
                   int32_t baseline, float* out);
  // Activation patching from the clean run into the corrupted one (equal
  // lengths), LD at the last position: over 0 (heads) out [N, H], each
  // head's z at every position; over 1 (residual) out [N, L], x_l at one
  // position. out holds LD_patched; ld[0] = LD_clean, ld[1] = LD_corrupted.
  // The clean run's activations are kept and each patched run recomputes
  // from the patched block on.
  Status Patch(int64_t length, const int32_t* clean, const int32_t* corrupted, int32_t target,
               int32_t baseline, int32_t over, float* out, double* ld);

  Status ConfigureOptimizer(const AdamWConfig& config);
  // Loss and metrics without updating (dropout off). The gradient and
  // optimizer buffers are allocated by the first Step or ConfigureOptimizer,
  // so a model that only runs holds its weights once.
  Status Evaluate(int64_t batch, int64_t length, const int32_t* tokens,
                  const int32_t* targets, const float* loss_mask,
                  StepResult* result);
  // Forward, backward and one AdamW update. When the loss or the gradient is
  // not finite, nothing is updated and a FailedPrecondition status says so.
  Status Step(int64_t batch, int64_t length, const int32_t* tokens,
              const int32_t* targets, const float* loss_mask,
              StepResult* result);
  // Forgets the optimizer state (moments, step count).
  void ResetOptimizer();
  int64_t HeldBytes() const;
  // The 16-bit copy of a tied LM head (a 16-bit checkpoint; see packed_half)
  // when it is in use, else 0.
  int64_t HeadCopyBytes() const;
  // The ggml type id (8 Q8_0, 2 Q4_0, 12 Q4_K, 14 Q6_K) parameter `index` is held in as GGML
  // blocks (WriteParamQuant), or 0 when it is held as floats or 16 bits.
  int32_t ParamQuantKind(int64_t index) const;
  // Copies the GGML blocks parameter `index` is held in (its rows as a GGUF
  // file holds them) to out, which has room for `capacity` bytes; returns
  // their bytes, or 0 when it is not held as blocks or out is too small.
  int64_t CopyParamBlocks(int64_t index, uint8_t* out, int64_t capacity) const;

 private:
  Transformer();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// ---------------------------------------------------------------------------
// Seeded task generators

enum class TaskKind : int { kCopy = 0, kReverse, kSort, kShift, kInduction };

// Fills tokens [B, L] (uniform in [0, V)), targets [B, L] and loss_mask
// [B, L] (1 where the loss counts):
//   copy       target = token (attention: the diagonal)
//   reverse    target[i] = token[L-1-i] (the anti-diagonal)
//   sort       target = tokens sorted ascending
//   shift      target[i] = token[(i-1) mod L] (the previous token)
//   induction  a segment of S = max(2, L/4) tokens is repeated later in the
//              sequence; target[i] = token[i+1], with the loss on the second
//              copy where the next token is predictable (L >= 8; causal).
// Each draw is DropoutUniform(seed, counter): the same seed gives the same
// batch everywhere.
Status GenerateTask(TaskKind kind, int64_t batch, int64_t length,
                    int64_t vocab, uint32_t seed, int32_t* tokens,
                    int32_t* targets, float* loss_mask);

}  // namespace attnlab

#endif  // ATTNLAB_TRAIN_TRAIN_H_

// The block graph of every model in the library (train.h TransformerConfig),
// private to src/train/: the Transformer's state (its weight store, the
// activations kept for the backward, the key/value cache) and the graph's
// forward and backward (transformer_graph.cpp). transformer.cpp holds the
// public API with its checks. R = rows of one call:
//   x0 = Emb[tokens]·embed_scale + Pos (+ Type[0]); embed_norm: x0 = LN(e0)  [R, E]
//   post-norm block (x = x_l):
//     a  = Dropout(MHA(x, x, x))   (MhaActivations q, k, v, ctx)     [R, E]
//     h  = Norm1(x + a)                                              [R, E]
//     f1 = h·W1ᵀ + b1;  g = act(f1) (SwiGLU: SiLU(h·Wgᵀ + bg)·f1)     [R, F]
//     f2 = Dropout(g·W2ᵀ + b2);  x_{l+1} = Norm2(h + f2)             [R, E]
//   pre-norm block:
//     n1 = Norm1(x) (block 0 with first_norm1 false: x);  a = Dropout(MHA(n1));  h = x + a
//     n2 = Norm2(h);  f1, g as above from n2;  x_{l+1} = h + Dropout(f2)
//     parallel_residual: n2 = Norm2(x) (x_{l+1} = x + a + f2)
//     sandwich_norm: h = x + PostAttnNorm(a);  x_{l+1} = h + PostFfnNorm(f2)
//   cross_attention (a decoder; the memory's K, V projected once by SetMemory
//     into xcache, read through MhaShape::kv_ready):
//     post-norm  c = NormX(h + XMHA(h, mem)), the MLP on c: x' = Norm2(c + f2)
//     pre-norm   c = h + XMHA(NormX(h), mem), x' = c + MLP(Norm2(c))
//   relative_buckets: score_bias [H, L, Lk] from rel_bias.weight by bucket,
//     added to every self-attention layer's scores (MhaShape::score_bias)
//   MHA (train/ops.h MhaShape): head_dim, qk_norm, attn_scale, attn_softcap,
//     the window on local layers, their RoPE table, rotary_dim
//   xf = FinalNorm(x_N) (pre-norm) or x_N;  MLM: t = LN(GELU(xf·Wtᵀ + bt))
//   logits = (t or xf)·headScale·Whᵀ + bh   (Wh = Emb when tied)     [R, V]
//   final_softcap: logits = c·tanh(logits/c)
// The backward walks the same buffers in reverse (train/ops.h), then AdamW
// updates the flat parameter vector.
#ifndef ATTNLAB_TRAIN_TRANSFORMER_GRAPH_H_
#define ATTNLAB_TRAIN_TRANSFORMER_GRAPH_H_

#include <memory>
#include <vector>

#include "train/ops.h"
#include "train/weight_store.h"

namespace attnlab {

namespace train {
// The parameters of one block, as weight-store indices (-1: the config has
// no such tensor), and the pointers the MHA ops take.
struct BlockParams {
  MhaParams attn;
  MhaGrads dattn;
  int64_t norm1_w = -1, norm1_b = -1, w1 = -1, b1 = -1, wg = -1, bg = -1, w2 = -1, b2 = -1,
          norm2_w = -1, norm2_b = -1, attn_id[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
  int64_t q_norm = -1, k_norm = -1;                 // qk_norm
  int64_t post_attn_w = -1, post_attn_b = -1, post_ffn_w = -1, post_ffn_b = -1;  // sandwich_norm
  const kernels::PackedB* pk[8] = {};  // packed attention projections (inference)
  // cross_attention: the second MHA (queries from the block, keys and
  // values from the memory) and its norm.
  MhaParams xattn;
  int64_t xattn_id[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
  int64_t normx_w = -1, normx_b = -1;
  const kernels::PackedB* xpk[8] = {};
};

struct BlockActs {
  MhaActivations mha;
  internal::AlignedBuffer a, h, f1, g, f2;
  internal::AlignedBuffer n1, n2, fg;  // pre-norm inputs of MHA and MLP; the SwiGLU / GeGLU gate
  internal::AlignedBuffer pn;          // sandwich_norm: a post norm's output (scratch)
  MhaActivations xmha;                 // cross_attention: its MHA's activations,
  internal::AlignedBuffer xa, xc, xn;  // output, post-norm c, pre-norm NormX(h)
};

// A key/value cache per layer, [maxL, Hkv·D] (Extend, batch 1).
struct LayerCache {
  internal::AlignedBuffer k, v;
};
// T5's relative position bucket of key − query distance `rel`
// (transformers' _relative_position_bucket).
int64_t RelativeBucket(int64_t rel, bool bidirectional, int64_t buckets, int64_t max_distance);

uint32_t Hash32(uint32_t x);
}  // namespace train

struct Transformer::Impl {
  using AlignedBuffer = internal::AlignedBuffer;
  TransformerConfig config;
  train::WeightStore store;
  AlignedBuffer grads, m, v;  // the flat layout (WeightStore::CopyAll)
  bool training_buffers = false;
  std::vector<uint8_t> decay;
  int64_t embed_id = 0, pos_id = -1, type_id = -1, embed_norm_w = -1, embed_norm_b = -1;
  int64_t final_norm_w = -1, final_norm_b = -1;
  int64_t mlm_w = -1, mlm_b = -1, mlm_norm_w = -1, mlm_norm_b = -1;
  int64_t head_w = -1, head_b = -1;
  int64_t rel_bias_id = -1;  // relative_buckets: [buckets, H]
  std::vector<train::BlockParams> blocks;
  std::vector<float> sinusoid;        // [maxL, E] when positional is sinusoidal
  std::vector<float> rope_cos, rope_sin, rope_neg_sin;  // [maxL, D/2] (rope)
  train::RopeTables rope;
  std::vector<float> rope_local_cos, rope_local_sin, rope_local_neg_sin;  // rope_local_theta
  train::RopeTables rope_local;
  std::vector<uint8_t> head_enabled;  // [N, H]
  // Activations and gradient scratch.
  std::unique_ptr<AlignedBuffer[]> x;        // N + 1 buffers [R, E]
  std::unique_ptr<train::BlockActs[]> acts;  // N
  AlignedBuffer e0, xf, t1, t2, t3;          // embedding sum, final norm, MLM transform
  AlignedBuffer logits, dlogits, dx, dh, dtmp, dn, dg, dg2;
  std::unique_ptr<train::LayerCache[]> cache;  // N, allocated by the first Extend
  int64_t cached = 0;
  // cross_attention: each layer's memory keys and values [B, Le, Hkv·D]
  // (SetMemory), and the memory's batch and length (0: none set).
  std::unique_ptr<train::LayerCache[]> xcache;
  int64_t memory_batch = 0, memory_length = 0;
  AlignedBuffer score_bias, head_in;  // [H, L, Lk] (relative_buckets); the head's scaled input
  // Refuses a call of `batch` sequences before SetMemory set one of that
  // batch (cross_attention), and cross weights without cross_attention.
  Status CheckMemory(const char* where, int64_t batch, const float* cross) const;
  // Refuses training where the backward has no path (cross_attention,
  // relative_buckets, head_scale).
  Status CheckTrainable(const char* where) const;
  // The relative position bias [H, length, pos0 + length] of query rows at
  // positions pos0.. into score_bias.
  bool RelativeBias(int64_t length, int64_t pos0);
  // The cross-attention of layer l: `rows` = nb·nq query rows `in` → out,
  // weights optional [nb, H, nq, Le].
  bool CrossAttention(int64_t l, int64_t nb, int64_t nq, const float* in, float* out, float* weights);
  int64_t last_rows = 0;  // rows of the last Forward / Extend (LayerInputs)
  train::Workspace ws;
  int64_t rows_reserved = 0, grad_rows_reserved = 0;
  AdamWConfig opt;
  int64_t step = 0;
  uint64_t dropout_calls = 0;

  // Registers every tensor of the config in the weight store (their order
  // fixes the flat offsets and the init seeds: options add tensors without
  // moving the default model's) and sets the block indices.
  void Build();
  // After the store is allocated: the MHA ops' weight pointers, the
  // positional tables and the activation arrays.
  void Bind();

  float* P(int64_t i) { return store.Data(i); }
  float* G(int64_t i) {
    return i < 0 ? nullptr : grads.data() + store.infos()[static_cast<size_t>(i)].offset;
  }
  // y = x·Wᵀ + b through the packed weight when there is one.
  bool Lin(int64_t rows, int64_t in, int64_t out, const float* x, int64_t w, int64_t b, float* y);
  int64_t HeadDim() const {
    return config.head_dim > 0 ? config.head_dim : config.embed_dim / config.num_heads;
  }
  int64_t KvWidth() const {
    const int64_t hkv = config.num_kv_heads > 0 ? config.num_kv_heads : config.num_heads;
    return hkv * HeadDim();
  }
  // Layer l attends through the sliding window (layer_kinds, sliding_window).
  bool IsLocal(int64_t l) const {
    if (config.sliding_window <= 0) return false;
    return config.layer_kinds.empty() || config.layer_kinds[static_cast<size_t>(l)] == 'l';
  }
  // Block l's pre-norm norm1 is the identity (first_norm1 false, block 0).
  bool IsIdentityNorm1(int64_t l) const { return l == 0 && config.prenorm && !config.first_norm1; }
  bool Gated() const {
    return config.activation == Activation::kSwiGlu || config.activation == Activation::kGeGlu ||
           config.activation == Activation::kGeGluTanh;
  }
  // The attention's shape and options of layer l (its RoPE table, qk_norm
  // weights and their grads when training).
  void LayerAttention(int64_t l, bool grads, train::MhaShape* shape);
  bool EnsureTrainingBuffers();
  bool Reserve(int64_t rows, bool training);
  uint32_t DropoutSeed(uint64_t call) const {
    return train::Hash32(config.seed ^ train::Hash32(static_cast<uint32_t>(call) * 0x9E3779B9u + 0x632BE5ABu));
  }
  void Norm(int64_t rows, const float* in, const float* r, int64_t w, int64_t b, float* out);
  // dz = ∂/∂(in + r) of Norm (written); the weight grads accumulate.
  void NormBackward(int64_t rows, const float* in, const float* r, int64_t w, int64_t b,
                    const float* dy, float* dz);
  // The MLP of one block: f2 = W2·act(W1·in + b1) + b2.
  bool Mlp(int64_t rows, const train::BlockParams& bp, train::BlockActs& a, const float* in);
  // dout: ∂/∂f2 (read); din: ∂/∂in (written).
  bool MlpBackward(int64_t rows, train::BlockParams& bp, train::BlockActs& a, const float* in,
                   const float* dout, float* din);

  // pos0 > 0 or use_cache: batch 1, positions pos0.. (Extend).
  // last_row (with use_cache): only the last row's final hidden state is
  // wanted, so the last block queries and runs on that row alone after its
  // keys and values are cached (as llama.cpp's inp_out_ids): the other rows
  // of x[N] / xf are left unwritten, and x[0..N−1] and the cache are as
  // without it.
  // cross: optional N·[B, H, L, Le], the cross-attention weights.
  bool Forward(int64_t batch, int64_t length, const int32_t* tokens, bool training,
               float* attention, int64_t pos0, bool use_cache, bool last_row = false,
               float* cross = nullptr);
  bool Backward(int64_t batch, int64_t length, const int32_t* tokens);
  // The head's input rows (after the final norm / MLM transform) and the
  // hidden state reported to callers.
  const float* HeadInput() {
    if (config.mlm_head) return t3.data();
    return config.prenorm ? xf.data() : x[config.num_layers].data();
  }
  const float* Hidden() { return config.prenorm ? xf.data() : x[config.num_layers].data(); }
  const float* HeadWeight() { return config.tie_embeddings ? P(embed_id) : P(head_w); }
  // logits [rows, V] of the head input rows first..first+rows−1.
  // (with final_softcap the capped ones; RawLogits: before the cap)
  bool Logits(int64_t first, int64_t rows, float* out);
  bool RawLogits(int64_t first, int64_t rows, float* out);
  // Bytes of the activations, scratch and cache (HeldBytes less the store
  // and the training buffers).
  int64_t ScratchBytes() const;

  // ---- Interpretability (transformer_interp.cpp) ----
  // Forward's hooks: z_edits[l] edits layer l's z before o_proj (empty: no
  // edits; inference only); the blocks run from start_layer (x[start_layer]
  // already holds their input; the embeddings are still written to x[0]),
  // and block start_layer first copies, into sequence b of its input, row
  // resid_rows[b] of resid_source ([L, E]; null: no copy).
  std::vector<train::ZEdit> z_edits;
  int64_t start_layer = 0;
  const float* resid_source = nullptr;
  std::vector<int64_t> resid_rows;
  int64_t resid_length = 0;
  // The ablations SetAblations set, (layer, head, mode) triples: z_edits
  // is built from them whenever no call of transformer_interp.cpp edits.
  std::vector<int32_t> ablations;
  void RebuildZEdits();
  void PatchResidual(int64_t l);
  // Logits [rows, V] of head input rows `in` (Logits' path for any rows).
  bool HeadLogits(int64_t rows, const float* in, float* out);
  // Row `id` of the unembedding as the head's product reads it, and its bias.
  void HeadRow(int64_t id, float* out, float* bias);
};

}  // namespace attnlab

#endif  // ATTNLAB_TRAIN_TRANSFORMER_GRAPH_H_

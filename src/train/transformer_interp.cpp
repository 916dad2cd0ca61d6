// Interpretability on the block graph (train.h, docs/interpretability.md),
// after TransformerLens (transformer_lens/ActivationCache.py, patching.py):
// head ablations, the logit lens, direct logit attribution and activation
// patching. They use three hooks of Impl::Forward (transformer_graph.h):
// per-layer edits of the heads' z before o_proj (ApplyZEdit, called by
// MhaForward), a first block to run from and a residual row to copy in.
// Everything that needs the weights is computed here, through the packed
// or float projections, so no weight matrix is copied out.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <sstream>

#include "train/transformer_graph.h"

namespace attnlab {

namespace train {
void ApplyZEdit(const ZEdit& edit, const MhaShape& s, float* ctx) {
  if (edit.mode.empty()) return;
  const int64_t d = s.head_dim > 0 ? s.head_dim : s.e / s.heads, w = s.heads * d, lq = s.lq;  // the context layout ZeroDisabledHeads uses
  const bool per_sequence = static_cast<int64_t>(edit.mode.size()) == s.batch * s.heads;
  const size_t bytes = static_cast<size_t>(d) * sizeof(float);
  std::vector<double> mean;
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h) {
      const auto mode = static_cast<ZEditMode>(edit.mode[static_cast<size_t>(per_sequence ? b * s.heads + h : h)]);
      float* z = ctx + b * lq * w + h * d;  // row r of this sequence: z + r·w
      switch (mode) {
        case ZEditMode::kKeep: break;
        case ZEditMode::kZero:
          for (int64_t r = 0; r < lq; ++r) std::memset(z + r * w, 0, bytes);
          break;
        case ZEditMode::kReplace:
          for (int64_t r = 0; r < lq; ++r) std::memcpy(z + r * w, edit.source + h * d + (s.pos0 + r) * w, bytes);
          break;
        case ZEditMode::kMean:
          mean.assign(static_cast<size_t>(d), 0.0);
          for (int64_t r = 0; r < lq; ++r) {
            for (int64_t j = 0; j < d; ++j) mean[static_cast<size_t>(j)] += z[r * w + j];
          }
          for (int64_t r = 0; r < lq; ++r) {
            for (int64_t j = 0; j < d; ++j) {
              z[r * w + j] = static_cast<float>(mean[static_cast<size_t>(j)] / static_cast<double>(lq));
            }
          }
          break;
      }
    }
  }
}
}  // namespace train

using train::ZEdit;
using train::ZEditMode;

void Transformer::Impl::RebuildZEdits() {
  z_edits.clear();
  if (ablations.empty()) return;
  const int64_t nh = config.num_heads;
  z_edits.resize(static_cast<size_t>(config.num_layers));
  for (auto& edit : z_edits) edit.mode.assign(static_cast<size_t>(nh), 0);
  for (size_t i = 0; i + 2 < ablations.size(); i += 3) {
    z_edits[static_cast<size_t>(ablations[i])].mode[static_cast<size_t>(ablations[i + 1])] =
        static_cast<uint8_t>(ablations[i + 2]);
  }
}

void Transformer::Impl::PatchResidual(int64_t l) {
  if (resid_source == nullptr) return;
  const int64_t e = config.embed_dim;
  for (size_t b = 0; b < resid_rows.size(); ++b) {
    const int64_t p = resid_rows[b];
    std::memcpy(x[l].data() + (static_cast<int64_t>(b) * resid_length + p) * e, resid_source + p * e,
                static_cast<size_t>(e) * sizeof(float));
  }
}

bool Transformer::Impl::HeadLogits(int64_t rows, const float* in, float* out) {
  const int64_t e = config.embed_dim;
  if (!config.tie_embeddings) return Lin(rows, e, config.vocab_size, in, head_w, head_b, out);
  if (const kernels::PackedB* blocks = store.TableBlocks(embed_id)) {  // as RawLogits
    train::LinearForwardPacked(rows, e, config.vocab_size, in, *blocks, P(head_b), out);
    return true;
  }
  if (rows <= internal::kGemvRows && store.HeadCopyReady()) {  // as Logits
    kernels::GemvTHalf(rows, config.vocab_size, e, in, e, store.head_copy(), P(head_b), out,
                       config.vocab_size);
    return true;
  }
  return train::LinearForward(rows, e, config.vocab_size, in, HeadWeight(), P(head_b), out, &ws);
}

void Transformer::Impl::HeadRow(int64_t id, float* out, float* bias) {
  const int64_t e = config.embed_dim;
  *bias = head_b >= 0 ? P(head_b)[id] : 0.0f;
  const kernels::PackedB* pk = config.tie_embeddings ? nullptr : store.Packed(head_w);
  if (pk == nullptr) {
    store.Row(config.tie_embeddings ? embed_id : head_w, id, out);
    return;
  }
  if (pk->quant.data != nullptr) {
    kernels::DequantizeRow(pk->quant.kind, pk->quant.data + id * pk->quant.ld, e, out);
    return;
  }
  if (pk->half != nullptr) {
    for (int64_t k = 0; k < e; ++k) out[k] = kernels::HalfToFloat(pk->half[kernels::HalfOffset(*pk, k, id)], pk->kind);
    return;
  }
  const float* col = pk->data + (id / pk->nr) * pk->panel_stride + id % pk->nr;
  for (int64_t k = 0; k < e; ++k) out[k] = col[k * pk->nr];
}

namespace {
// Restores the persistent ablations and the plain forward on scope exit.
// (A template: Impl is private to Transformer, named by its members only.)
template <typename Impl>
struct InterpScope {
  Impl& im;
  explicit InterpScope(Impl& impl) : im(impl) { im.z_edits.clear(); }
  ~InterpScope() {
    im.start_layer = 0;
    im.resid_source = nullptr;
    im.resid_rows.clear();
    im.RebuildZEdits();
  }
};

// The context rows (the heads' z side by side, o_proj's input): H·D wide
// (D = head_dim, or E / H).
int64_t ContextWidth(const TransformerConfig& c) {
  return c.num_heads * (c.head_dim > 0 ? c.head_dim : c.embed_dim / c.num_heads);
}

Status CheckIds(const char* where, const char* what, const TransformerConfig& c, int64_t length,
                const int32_t* tokens) {
  if (length < 1 || length > c.max_length) {
    std::ostringstream os;
    os << where << ": " << what << " must have 1 to " << c.max_length << " tokens (maxLength), got " << length;
    return Status::Invalid(os.str());
  }
  if (tokens == nullptr) return Status::Invalid(std::string(where) + ": " + what + " is null");
  for (int64_t i = 0; i < length; ++i) {
    if (tokens[i] < 0 || tokens[i] >= c.vocab_size) {
      std::ostringstream os;
      os << where << ": " << what << "[" << i << "] is " << tokens[i] << ", outside [0, " << c.vocab_size - 1 << "]";
      return Status::Invalid(os.str());
    }
  }
  return Status::Ok();
}

Status CheckPreNorm(const char* where, const TransformerConfig& c) {
  if (!c.prenorm) {
    return Status::Invalid(std::string(where) +
                           ": needs a pre-norm model; in a post-norm model (BERT) the residual passes through a "
                           "norm in every block, so it is not a sum of the parts and no block's residual is a "
                           "stage of the final prediction");
  }
  if (!c.has_head || c.mlm_head) {
    return Status::Invalid(std::string(where) + ": needs a causal language-model head (this model has " +
                           (c.has_head ? "a masked-LM head" : "no head") + ")");
  }
  return Status::Ok();
}

Status CheckVocab(const char* where, const char* what, const TransformerConfig& c, int32_t id) {
  if (id >= 0 && id < c.vocab_size) return Status::Ok();
  std::ostringstream os;
  os << where << ": " << what << " must be a token id in [0, " << c.vocab_size - 1 << "], got " << id;
  return Status::Invalid(os.str());
}

// Softmax over v logits and the k largest (ties: the lower id first).
void TopK(const float* logits, int64_t v, int64_t k, std::vector<int32_t>& order, int32_t* ids, float* probs) {
  float mx = logits[0];
  for (int64_t i = 1; i < v; ++i) mx = std::max(mx, logits[i]);
  double sum = 0.0;
  for (int64_t i = 0; i < v; ++i) sum += std::exp(static_cast<double>(logits[i]) - mx);
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  for (int64_t j = 0; j < k; ++j) {
    ids[j] = order[static_cast<size_t>(j)];
    probs[j] = static_cast<float>(std::exp(static_cast<double>(logits[ids[j]]) - mx) / sum);
  }
}
}  // namespace

Status Transformer::SetAblations(int64_t count, const int32_t* layer_head_mode) {
  Impl& im = *impl_;
  const TransformerConfig& c = im.config;
  if (count < 0 || (count > 0 && layer_head_mode == nullptr)) {
    return Status::Invalid("ablate: count must be >= 0 with an array of (layer, head, mode) triples");
  }
  for (int64_t i = 0; i < count; ++i) {
    const int32_t l = layer_head_mode[3 * i], h = layer_head_mode[3 * i + 1], m = layer_head_mode[3 * i + 2];
    if (l < 0 || l >= c.num_layers || h < 0 || h >= c.num_heads) {
      std::ostringstream os;
      os << "ablate[" << i << "]: layer must be in [0, " << c.num_layers - 1 << "] and head in [0, "
         << c.num_heads - 1 << "], got layer " << l << ", head " << h;
      return Status::Invalid(os.str());
    }
    if (m != static_cast<int32_t>(ZEditMode::kZero) && m != static_cast<int32_t>(ZEditMode::kMean)) {
      std::ostringstream os;
      os << "ablate[" << i << "]: mode must be 1 (zero) or 2 (mean), got " << m;
      return Status::Invalid(os.str());
    }
  }
  std::vector<int32_t> next(layer_head_mode, layer_head_mode + 3 * count);
  if (next != im.ablations) {
    im.ablations = std::move(next);
    im.cached = 0;  // cached K/V of later layers depended on them
  }
  im.RebuildZEdits();
  return Status::Ok();
}

Status Transformer::LogitLens(int64_t length, const int32_t* tokens, int64_t k, int32_t* top_ids,
                              float* top_probs, float* logits) {
  Impl& im = *impl_;
  const TransformerConfig& c = im.config;
  const char* where = "logitLens";
  Status s = CheckPreNorm(where, c);
  if (!s.ok() || !(s = CheckIds(where, "tokens", c, length, tokens)).ok()) return s;
  const int64_t vocab = c.vocab_size, e = c.embed_dim, nl = c.num_layers;
  if (k < 1 || k > vocab) {
    std::ostringstream os;
    os << where << ": k must be an integer in [1, " << vocab << "] (the vocabulary), got " << k;
    return Status::Invalid(os.str());
  }
  if (top_ids == nullptr || top_probs == nullptr) return Status::Invalid(std::string(where) + ": no output");
  InterpScope<Impl> scope(im);
  internal::AlignedBuffer normed_buf, lg_buf;
  if (!normed_buf.Reserve(length * e) || !lg_buf.Reserve(length * vocab)) {
    return Status::OutOfMemory(std::string(where) + ": out of memory for the logits");
  }
  float* normed = normed_buf.data();
  float* lg = lg_buf.data();
  std::vector<int32_t> order(static_cast<size_t>(vocab));
  if (!im.Forward(1, length, tokens, false, nullptr, 0, false)) {
    return Status::OutOfMemory(std::string(where) + ": out of memory (wasm memory is limited to 4 GiB)");
  }
  for (int64_t r = 0; r <= nl; ++r) {
    // Row N normalises x_N as Forward did (into xf), so it is Forward's logits.
    im.Norm(length, im.x[r].data(), nullptr, im.final_norm_w, im.final_norm_b, normed);
    if (!im.HeadLogits(length, normed, lg)) {
      return Status::OutOfMemory(std::string(where) + ": out of memory for the logits");
    }
    if (c.final_softcap > 0.0f) {  // as Logits
      const float cap = c.final_softcap;
      for (int64_t i = 0; i < length * vocab; ++i) lg[i] = cap * std::tanh(lg[i] / cap);
    }
    if (logits != nullptr) {
      std::memcpy(logits + r * length * vocab, lg, static_cast<size_t>(length * vocab) * sizeof(float));
    }
    for (int64_t p = 0; p < length; ++p) {
      const int64_t at = (r * length + p) * k;
      TopK(lg + p * vocab, vocab, k, order, top_ids + at, top_probs + at);
    }
  }
  return Status::Ok();
}

Status Transformer::Attribute(int64_t length, const int32_t* tokens, int64_t position, int32_t target,
                              int32_t baseline, float* out) {
  Impl& im = *impl_;
  const TransformerConfig& c = im.config;
  const char* where = "attribute";
  Status s = CheckPreNorm(where, c);
  if (!s.ok() || !(s = CheckIds(where, "tokens", c, length, tokens)).ok()) return s;
  if (!(s = CheckVocab(where, "target", c, target)).ok() ||
      (baseline != -1 && !(s = CheckVocab(where, "baseline", c, baseline)).ok())) {
    return s;
  }
  if (c.sandwich_norm) {
    return Status::Invalid(std::string(where) +
                           ": this model normalises each attention and MLP output before adding it to the "
                           "residual (sandwich norms, gemma2/gemma3), so the residual is not a sum of the heads' "
                           "outputs; the logit lens, ablation and patching work on it");
  }
  if (position < 0 || position >= length) {
    std::ostringstream os;
    os << where << ": position must be in [0, " << length - 1 << "] (the input's positions), got " << position;
    return Status::Invalid(os.str());
  }
  if (out == nullptr) return Status::Invalid(std::string(where) + ": no output");
  const int64_t e = c.embed_dim, nl = c.num_layers, nh = c.num_heads, w = ContextWidth(c), d = w / nh;
  InterpScope<Impl> scope(im);
  if (!im.Forward(1, length, tokens, false, nullptr, 0, false)) {
    return Status::OutOfMemory(std::string(where) + ": out of memory (wasm memory is limited to 4 GiB)");
  }
  const bool layer_norm = c.norm == NormKind::kLayerNorm;
  // The frozen scale: the final norm's denominator on x_N at `position`.
  const float* xn = im.x[nl].data() + position * e;
  double mu = 0.0, var = 0.0;
  for (int64_t j = 0; j < e; ++j) mu += xn[j];
  mu = layer_norm ? mu / static_cast<double>(e) : 0.0;
  for (int64_t j = 0; j < e; ++j) var += (xn[j] - mu) * (xn[j] - mu);
  const double scale = std::sqrt(var / static_cast<double>(e) + static_cast<double>(c.eps));
  // dir = W_U[target] − W_U[baseline]; u = norm weight ⊙ dir, centred for
  // LayerNorm (centre(part)·u = part·centre(u)) and divided by the scale:
  // then every part is part·u.
  std::vector<float> wt(static_cast<size_t>(e)), wb(static_cast<size_t>(e));
  float bt = 0.0f, bb = 0.0f;
  im.HeadRow(target, wt.data(), &bt);
  if (baseline >= 0) im.HeadRow(baseline, wb.data(), &bb);  // else zeros: logit[target] alone
  const float* gamma = im.P(im.final_norm_w);
  const float* beta = im.final_norm_b >= 0 ? im.P(im.final_norm_b) : nullptr;
  std::vector<double> u(static_cast<size_t>(e));
  double constant = static_cast<double>(bt) - bb, umean = 0.0;
  for (int64_t j = 0; j < e; ++j) {
    const double dj = static_cast<double>(wt[j]) - wb[j];
    u[j] = gamma[j] * dj;
    umean += u[j];
    if (beta != nullptr) constant += beta[j] * dj;
  }
  umean = layer_norm ? umean / static_cast<double>(e) : 0.0;
  for (auto& uj : u) uj = (uj - umean) / scale;
  auto part = [&](const float* v) {
    double sum = 0.0;
    for (int64_t j = 0; j < e; ++j) sum += v[j] * u[j];
    return static_cast<float>(sum);
  };
  float* heads = out + 1;
  float* attn_bias = heads + nl * nh;
  float* mlps = attn_bias + nl;
  out[0] = part(im.x[0].data() + position * e);
  // Each head's z·W_Oᵀ at `position`: the context row with only that head's
  // columns kept, through o_proj without its bias ([H, H·D] → [H, E]).
  std::vector<float> z(static_cast<size_t>(nh * w), 0.0f), o(static_cast<size_t>(nh * e));
  for (int64_t l = 0; l < nl; ++l) {
    const train::BlockParams& bp = im.blocks[static_cast<size_t>(l)];
    const float* ctx = im.acts[l].mha.ctx.data() + position * w;
    for (int64_t h = 0; h < nh; ++h) std::memcpy(&z[h * w + h * d], ctx + h * d, static_cast<size_t>(d) * sizeof(float));
    if (!im.Lin(nh, w, e, z.data(), bp.attn_id[6], -1, o.data())) {
      return Status::OutOfMemory(std::string(where) + ": out of memory");
    }
    for (int64_t h = 0; h < nh; ++h) heads[l * nh + h] = part(&o[h * e]);
    attn_bias[l] = bp.attn_id[7] >= 0 ? part(im.P(bp.attn_id[7])) : 0.0f;
    mlps[l] = part(im.acts[l].f2.data() + position * e);
  }
  mlps[nl] = static_cast<float>(constant);
  // LD from the model's own logits at `position`.
  std::vector<float> lg(static_cast<size_t>(c.vocab_size));
  // (RawLogits: before a final softcap, which is not linear; the parts sum to these.)
  if (!im.RawLogits(position, 1, lg.data())) return Status::OutOfMemory(std::string(where) + ": out of memory");
  mlps[nl + 1] = lg[target] - (baseline >= 0 ? lg[baseline] : 0.0f);
  return Status::Ok();
}

Status Transformer::Patch(int64_t length, const int32_t* clean, const int32_t* corrupted, int32_t target,
                          int32_t baseline, int32_t over, float* out, double* ld) {
  Impl& im = *impl_;
  const TransformerConfig& c = im.config;
  const char* where = "patch";
  Status s = CheckPreNorm(where, c);
  if (!s.ok() || !(s = CheckIds(where, "clean", c, length, clean)).ok() ||
      !(s = CheckIds(where, "corrupted", c, length, corrupted)).ok() ||
      !(s = CheckVocab(where, "target", c, target)).ok() || !(s = CheckVocab(where, "baseline", c, baseline)).ok()) {
    return s;
  }
  if (over != 0 && over != 1) return Status::Invalid(std::string(where) + ": over must be 0 (heads) or 1 (residual)");
  if (out == nullptr || ld == nullptr) return Status::Invalid(std::string(where) + ": no output");
  // n: floats of one sequence's residual rows (and of its context rows, as
  // wide in this graph; nz if not).
  const int64_t e = c.embed_dim, nl = c.num_layers, nh = c.num_heads, n = length * e;
  const int64_t nz = length * ContextWidth(c), nk = std::max(n, nz);
  InterpScope<Impl> scope(im);
  std::vector<float> wt(static_cast<size_t>(e)), wb(static_cast<size_t>(e));
  float bt = 0.0f, bb = 0.0f;
  im.HeadRow(target, wt.data(), &bt);
  im.HeadRow(baseline, wb.data(), &bb);
  // LD at row `row` of the last call (the last position of a sequence) from
  // the final norm's row and two head rows.
  // (With a final softcap, of the capped logits, as the model's.)
  const double cap = c.final_softcap;
  auto logit_diff = [&](int64_t row) {
    const float* xf = im.xf.data() + row * e;
    double zt = bt, zb = bb;
    for (int64_t j = 0; j < e; ++j) {
      zt += static_cast<double>(xf[j]) * wt[j];
      zb += static_cast<double>(xf[j]) * wb[j];
    }
    return cap > 0.0 ? cap * (std::tanh(zt / cap) - std::tanh(zb / cap)) : zt - zb;
  };
  // f: the first position where the inputs differ. On a causal model the
  // positions before it compute the same in both runs: a patch there changes
  // nothing, and a patched run need not recompute them.
  int64_t f = 0;
  while (f < length && clean[f] == corrupted[f]) ++f;
  const bool causal = c.causal;
  // Two ways to run the patched forwards, with the same values:
  //   batched  `chunk` runs at a time as one batch of up to 256 rows (the
  //            GEMMs read each weight panel once for several runs);
  //   cached   (causal, inputs that agree on at least the first 3/4) one
  //            run at a time over positions f.. only, against the corrupted
  //            run's keys and values of the positions before f in the
  //            key/value cache, the last block on the last row alone.
  // (GPT-2 small, L 32, the texts differing at L/2, wasm: cached 5.5 s of
  // CPU on one thread but 6.0 s on two, whose small GEMMs barely split;
  // batched 9.8 s of CPU, 5.3 s on two threads.)
  const bool use_cache = causal && f > 0 && f < length && 4 * (length - f) <= length;
  const int64_t m = length - f;  // rows of a cached run
  const int64_t chunk = use_cache ? 1 : std::max<int64_t>(1, std::min<int64_t>(over == 0 ? nh : length, 256 / length));
  // The clean run's z (heads) or residuals, and the corrupted residuals.
  internal::AlignedBuffer clean_buf, corr_buf;
  std::vector<int32_t> tokens(static_cast<size_t>(chunk * length));
  for (int64_t i = 0; i < chunk; ++i) std::copy(corrupted, corrupted + length, tokens.begin() + i * length);
  if (!clean_buf.Reserve(nl * nk) || !corr_buf.Reserve(nl * n) || !im.Reserve(chunk * length, false)) {
    return Status::OutOfMemory(std::string(where) + ": out of memory for the clean run's activations");
  }
  const char* oom = "patch: out of memory (wasm memory is limited to 4 GiB)";
  if (use_cache) {
    if (!im.cache) {  // as Extend allocates it
      const int64_t kv = c.max_length * im.KvWidth();
      std::unique_ptr<train::LayerCache[]> cache(new train::LayerCache[static_cast<size_t>(nl)]);
      for (int64_t l = 0; l < nl; ++l) {
        if (!cache[l].k.Reserve(kv) || !cache[l].v.Reserve(kv)) return Status::OutOfMemory(oom);
      }
      im.cache = std::move(cache);
    }
    im.cached = 0;  // the cache holds the patched runs' keys and values now
  }
  float* kept = clean_buf.data();
  float* corr_x = corr_buf.data();
  if (!im.Forward(1, length, clean, false, nullptr, 0, false)) return Status::OutOfMemory(oom);
  ld[0] = logit_diff(length - 1);
  for (int64_t l = 0; l < nl; ++l) {
    const float* src = over == 0 ? im.acts[l].mha.ctx.data() : im.x[l].data();
    const int64_t rows_floats = over == 0 ? nz : n;
    std::memcpy(kept + l * nk, src, static_cast<size_t>(rows_floats) * sizeof(float));
  }
  if (!im.Forward(1, length, corrupted, false, nullptr, 0, use_cache)) return Status::OutOfMemory(oom);
  ld[1] = logit_diff(length - 1);
  for (int64_t l = 0; l < nl; ++l) {
    std::memcpy(corr_x + l * n, im.x[l].data(), static_cast<size_t>(n) * sizeof(float));
  }
  const int64_t cells = nl * (over == 0 ? nh : length);
  if (f == length) {  // equal inputs: no patch changes anything
    std::fill(out, out + cells, static_cast<float>(ld[1]));
    return Status::Ok();
  }
  // b patched runs from block l, each sequence starting from the corrupted
  // run's x_l (the blocks before it are the corrupted run's); the LD of
  // sequence i is at row last(i).
  auto run_from = [&](int64_t l, int64_t b) {
    im.start_layer = l;
    if (use_cache) {
      std::memcpy(im.x[l].data(), corr_x + l * n + f * e, static_cast<size_t>(m * e) * sizeof(float));
      return im.Forward(1, m, corrupted + f, false, nullptr, f, true, true);
    }
    for (int64_t i = 0; i < b; ++i) {
      std::memcpy(im.x[l].data() + i * n, corr_x + l * n, static_cast<size_t>(n) * sizeof(float));
    }
    return im.Forward(b, length, tokens.data(), false, nullptr, 0, false);
  };
  auto last = [&](int64_t i) { return use_cache ? m - 1 : i * length + length - 1; };
  if (over == 0) {
    im.z_edits.assign(static_cast<size_t>(nl), ZEdit{});
    for (int64_t l = 0; l < nl; ++l) {
      ZEdit& edit = im.z_edits[static_cast<size_t>(l)];
      edit.source = kept + l * nk;  // rows by position (ApplyZEdit reads position pos0 + r)
      for (int64_t h0 = 0; h0 < nh; h0 += chunk) {
        const int64_t b = std::min(chunk, nh - h0);
        edit.mode.assign(static_cast<size_t>(b * nh), 0);  // sequence i patches head h0 + i
        for (int64_t i = 0; i < b; ++i) edit.mode[static_cast<size_t>(i * nh + h0 + i)] = static_cast<uint8_t>(ZEditMode::kReplace);
        if (!run_from(l, b)) return Status::OutOfMemory(oom);
        for (int64_t i = 0; i < b; ++i) out[l * nh + h0 + i] = static_cast<float>(logit_diff(last(i)));
      }
      edit = ZEdit{};
    }
    return Status::Ok();
  }
  const int64_t first = causal ? f : 0;  // patches before f change nothing
  im.resid_length = use_cache ? m : length;
  for (int64_t l = 0; l < nl; ++l) {
    std::fill(out + l * length, out + l * length + first, static_cast<float>(ld[1]));
    // resid_rows index the call's rows: position p is row p − f of a cached run
    im.resid_source = kept + l * nk + (use_cache ? f * e : 0);
    for (int64_t p0 = first; p0 < length; p0 += chunk) {
      const int64_t b = std::min(chunk, length - p0);
      im.resid_rows.resize(static_cast<size_t>(b));  // sequence i patches position p0 + i
      for (int64_t i = 0; i < b; ++i) im.resid_rows[static_cast<size_t>(i)] = p0 + i - (use_cache ? f : 0);
      if (!run_from(l, b)) return Status::OutOfMemory(oom);
      for (int64_t i = 0; i < b; ++i) out[l * length + p0 + i] = static_cast<float>(logit_diff(last(i)));
    }
  }
  return Status::Ok();
}

}  // namespace attnlab

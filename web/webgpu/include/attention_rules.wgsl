// The score rules of the attention core (src/kernels/attention_core.cpp), the
// GPU copy shared by attention_scores_softmax, flash_attention and
// attention_trace_scores (pasted in at `// #include attention_rules`). Their
// parameters come from the wrapper's one normalisation (web/lib/mask.js); the
// wasm and webgpu backends agree on them by the browser tests.
//   s = q·k·scale → softcap c·tanh(s/c) → tensor mask → ALiBi -slope·|p_i - j|;
//   keys outside the row's range [lo, hi) (causal, sliding window, padding)
//   get `fill` (-1e9, or -inf: a row with nothing visible is then all zeros).
// Query i of batch b sits at p_i = i + offset: offset = len_b - Lq for
// align 1 (bottom-right; len_b = lengths[b] or Lk), else the given offset.
// The including kernel declares params { lq, lk, has_lengths, causal,
// causal_align, causal_offset, window, window_left, window_right,
// window_align, window_offset, alibi, softcap, fill, mask_kind } and the
// bindings lengths (u32) and slopes (f32, [H]). It includes softcap.

const NEG_INF_BITS = 0xff800000u;

fn fill_is_neg_inf() -> bool {
  return bitcast<u32>(params.fill) == NEG_INF_BITS;
}

// Keys of batch b that padding leaves visible.
fn visible_keys(b: u32) -> i32 {
  var v = i32(params.lk);
  if (params.has_lengths != 0u) {
    v = min(v, i32(lengths[b]));
  }
  return max(v, 0);
}

fn position_offset(align: u32, offset: i32, visible: i32) -> i32 {
  return select(offset, visible - i32(params.lq), align == 1u);
}

// The keys [lo, hi) of row i that no causal, window or padding mask fills.
// lo and hi are nondecreasing in i.
fn row_range(b: u32, i: u32) -> vec2u {
  let vis = visible_keys(b);
  let ii = i32(i);
  var lo = 0;
  var hi = vis;
  if (params.causal != 0u) {
    hi = min(hi, ii + position_offset(params.causal_align, params.causal_offset, vis) + 1);
  }
  if (params.window != 0u) {
    let p = ii + position_offset(params.window_align, params.window_offset, vis);
    if (params.window_left >= 0) {
      lo = max(lo, p - params.window_left);
    }
    if (params.window_right >= 0) {
      hi = min(hi, p + params.window_right + 1);
    }
  }
  lo = clamp(lo, 0, vis);
  hi = clamp(hi, lo, vis);
  return vec2u(u32(lo), u32(hi));
}

// ALiBi: the position p_i of row i (as float; the causal mask's alignment).
fn alibi_pos(b: u32, i: u32) -> f32 {
  let off = position_offset(params.causal_align, params.causal_offset, visible_keys(b));
  return f32(i32(i) + off);
}

// ALiBi: the slope of query head h (0: no bias).
fn alibi_slope(h: u32) -> f32 {
  return select(0.0, slopes[h], params.alibi != 0u);
}

// #include softcap

// c·tanh(x/c) (softcap > 0, include/softcap.wgsl), else x.
fn apply_softcap(x: f32) -> f32 {
  if (params.softcap > 0.0) {
    return softcap(x, params.softcap);
  }
  return x;
}

// The tensor mask of one score (keep: 0 → fill; block: s + m·fill where
// m ≠ 0; additive: s + m), as MaskOne.
fn apply_tensor_mask(x: f32, m: f32) -> f32 {
  switch params.mask_kind {
    case 1u: { return select(x, params.fill, m == 0.0); }
    case 2u: { return select(x + m * params.fill, x, m == 0.0); }
    case 3u: { return x + m; }
    default: { return x; }
  }
}

// Tensor mask (m read by the caller when mask_kind ≠ 0) and ALiBi of one
// capped score x of key j.
fn mask_and_bias(x: f32, m: f32, j: u32, slope: f32, pos: f32) -> f32 {
  var y = x;
  if (params.mask_kind != 0u) {
    y = apply_tensor_mask(y, m);
  }
  if (slope != 0.0) {
    y = y - slope * abs(pos - f32(j));
  }
  return y;
}

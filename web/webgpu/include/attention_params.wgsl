// The uniform fields the three attention kernels share (attention_scores_softmax,
// attention_trace_scores, flash_attention), pasted into the first lines of
// each one's Params struct by its include line; each kernel adds its own
// fields after them. scripts/embed-wgsl.mjs expands the include
// before it reads the struct, so the host packs the uniform from the fields
// as the kernel sees them, by name. Shape legend: B batch, H heads, Hkv kv
// heads, Lq/Lk sequence, D head dim; *_sb/_sh/_sl strides of batch, head, row.
  heads: u32,        // H
  kv_heads: u32,     // Hkv (H % Hkv == 0)
  lq: u32,           // Lq
  lk: u32,           // Lk
  d: u32,            // D
  scale: f32,
  softcap: f32,      // > 0: c·tanh(s/c); 0: none
  fill: f32,         // masked scores: finite (-1e9) or -inf
  causal: u32,
  causal_align: u32, // 0 top-left (+ causal_offset), 1 bottom-right
  causal_offset: i32,
  has_lengths: u32,
  window: u32,
  window_left: i32,  // -1: unbounded
  window_right: i32,
  window_align: u32,
  window_offset: i32,
  alibi: u32,
  q_sb: u32,
  q_sh: u32,
  q_sl: u32,
  k_sb: u32,
  k_sh: u32,
  k_sl: u32,
  mask_kind: u32,    // 0 none, 1 keep, 2 block, 3 additive
  m_sb: u32,
  m_sh: u32,
  m_sq: u32,
  m_sk: u32,

// Shared by attention_scores_softmax.wgsl and flash_attention.wgsl, pasted in
// at `// #include attention_scores` by scripts/embed-wgsl.mjs. The including
// kernel declares: params { lk, k_sl, d }, the bindings q, k (f32 arrays), and
// the privates s: array<vec4f, 16> and q_row: array<u32, 8>.

// S = Q·Kᵀ for keys j0 + tx + 8c into s.
fn scores(k_base: u32, j0: u32, tx: u32) {
  let last = params.lk - 1u;
  let k0 = k_base + min(j0 + tx, last) * params.k_sl;
  let k1 = k_base + min(j0 + tx + 8u, last) * params.k_sl;
  let k2 = k_base + min(j0 + tx + 16u, last) * params.k_sl;
  let k3 = k_base + min(j0 + tx + 24u, last) * params.k_sl;
  let k4 = k_base + min(j0 + tx + 32u, last) * params.k_sl;
  let k5 = k_base + min(j0 + tx + 40u, last) * params.k_sl;
  let k6 = k_base + min(j0 + tx + 48u, last) * params.k_sl;
  let k7 = k_base + min(j0 + tx + 56u, last) * params.k_sl;
  for (var a = 0u; a < 16u; a++) {
    s[a] = vec4f(0.0);
  }
  for (var d = 0u; d < params.d; d++) {
    let k_lo = vec4f(k[k0 + d], k[k1 + d], k[k2 + d], k[k3 + d]);
    let k_hi = vec4f(k[k4 + d], k[k5 + d], k[k6 + d], k[k7 + d]);
    let q0 = q[q_row[0] + d];
    let q1 = q[q_row[1] + d];
    let q2 = q[q_row[2] + d];
    let q3 = q[q_row[3] + d];
    let q4 = q[q_row[4] + d];
    let q5 = q[q_row[5] + d];
    let q6 = q[q_row[6] + d];
    let q7 = q[q_row[7] + d];
    s[0] += q0 * k_lo;
    s[1] += q0 * k_hi;
    s[2] += q1 * k_lo;
    s[3] += q1 * k_hi;
    s[4] += q2 * k_lo;
    s[5] += q2 * k_hi;
    s[6] += q3 * k_lo;
    s[7] += q3 * k_hi;
    s[8] += q4 * k_lo;
    s[9] += q4 * k_hi;
    s[10] += q5 * k_lo;
    s[11] += q5 * k_hi;
    s[12] += q6 * k_lo;
    s[13] += q6 * k_hi;
    s[14] += q7 * k_lo;
    s[15] += q7 * k_hi;
  }
}

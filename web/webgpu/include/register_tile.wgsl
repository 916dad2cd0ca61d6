// The 8×8 register tile of linear, attention_weighted_sum and
// flash_attention: invocation (tx, ty) of an 8×8 workgroup owns rows ty + 8a
// and columns tx + 8c (a, c < 8) of a 64×64 output tile. acc[2a] holds the
// columns c = 0..3 of row a, acc[2a + 1] the columns c = 4..7.
var<private> acc: array<vec4f, 16>;

// One k step: row a gains r_a·(lo, hi), where (lo, hi) are the 8 columns'
// values of that k (C += column r of A times row (lo, hi) of B).
fn tile_fma(r0: f32, r1: f32, r2: f32, r3: f32, r4: f32, r5: f32, r6: f32, r7: f32,
            lo: vec4f, hi: vec4f) {
  acc[0] += r0 * lo;
  acc[1] += r0 * hi;
  acc[2] += r1 * lo;
  acc[3] += r1 * hi;
  acc[4] += r2 * lo;
  acc[5] += r2 * hi;
  acc[6] += r3 * lo;
  acc[7] += r3 * hi;
  acc[8] += r4 * lo;
  acc[9] += r4 * hi;
  acc[10] += r5 * lo;
  acc[11] += r5 * hi;
  acc[12] += r6 * lo;
  acc[13] += r6 * hi;
  acc[14] += r7 * lo;
  acc[15] += r7 * hi;
}

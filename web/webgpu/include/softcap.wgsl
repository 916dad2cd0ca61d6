// c·tanh(x/c): Gemma 2's soft cap, of the attention scores (attention_rules,
// the core's attention_core.cpp) and of the final logits (logit_softcap.wgsl,
// the block graph's final_softcap, src/train/transformer_graph.cpp Logits).
// tanh saturates to ±1 in float32 well before |x/c| = 15, and the clamp keeps
// every implementation of tanh away from exp overflow. c > 0.
fn softcap(x: f32, c: f32) -> f32 {
  return c * tanh(clamp(x / c, -15.0, 15.0));
}

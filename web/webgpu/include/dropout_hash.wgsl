// The dropout hash of src/dropout.cpp (DropoutUniform), the GPU copy checked
// bit for bit against C++ by the webgpu browser test:
//   h = pcg(seed ^ pcg(i)), u = (h >> 8) / 2^24,
//   pcg(x): s = x·747796405 + 2891336453; w = ((s >> ((s >> 28) + 4)) ^ s)·277803737;
//           return (w >> 22) ^ w   (uint32 arithmetic)
fn pcg(v: u32) -> u32 {
  let state = v * 747796405u + 2891336453u;
  let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
  return (word >> 22u) ^ word;
}

// The uniform in [0, 1) that decides whether element i is dropped.
fn dropout_uniform(seed: u32, i: u32) -> f32 {
  let h = pcg(seed ^ pcg(i));
  return f32(h >> 8u) * (1.0 / 16777216.0);
}

// Fuzz target of lab.loadModel's parsers (web/lib/model/): config.json
// normalisation through the architecture tables, and
// model.safetensors.index.json with its shards. Mutates the tiny checkpoints'
// config.json and index (tests/golden/models) structurally — keys dropped,
// values swapped for other types, huge, negative or fractional numbers,
// prototype keys, nested junk — and checks that every input is accepted or
// refused with a RangeError/TypeError whose message starts with 'loadModel',
// never another error (an engine TypeError from reading a property of null
// counts as a failure).
//
//   node tests/fuzz/fuzz-models.mjs --seconds 60 --seed 7
// The Jest test tests/js/models-fuzz.test.js runs a short pass of runModelFuzz().
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { architectureOf } from '../../web/lib/model/architectures.js';
import { openWeights, parseJson } from '../../web/lib/model/files.js';
import { rng } from './fuzz-io.mjs';

const MODELS = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'golden', 'models');

const VALUES = [null, 0, -1, 1, 2, 3, 1.5, 1e9, 2 ** 53, -(2 ** 31), NaN, Infinity, '', '12', 'gpt2', 'llama', 'bert', 'distilbert', 'roberta', 'xlm-roberta', 'gelu', 'silu', 'default', 'linear', true, false, [], [1], {}, { type: 'linear' }, { rope_type: 'default' },
  // the keys of the decoders of issue 32: layer types, GPT-Neo's attention types, transformers 5's rope_parameters
  'gemma3_text', 'gelu_pytorch_tanh', 'sliding_attention', 'full_attention', ['sliding_attention', 'full_attention'], ['full_attention', null], [['global', 'local'], 1],
  [[['global', 'local'], 1]], [[['local'], 2]], [[['global'], -1]], [[[null], 1]], ['global', 'local'], { rope_type: 'longrope', short_factor: [1] }, { rope_theta: -1 },
  { full_attention: { rope_type: 'default', rope_theta: 1e6 }, sliding_attention: null }, { partial_rotary_factor: 2 }, 0.25, 0.3, 1e-300,
  // modernbert's keys (issue 34): its activations, window sizes, per-layer-type RoPE bases and layer_types
  'modernbert', 'gelu_new', 'relu', 127, 4097, ['full_attention', 'sliding_attention', 'sliding_attention'], ['full_attention', 'full_attention', 'sliding_attention'],
  { full_attention: { rope_theta: 160000 }, sliding_attention: { rope_theta: 10000 } }, { sliding_attention: { rope_type: 'yarn', factor: 2 } },
  // the encoder-decoders of issue 34: activation_function, feed_forward_proj, model types
  'swish', 'gated-gelu', 'gated-silu', 'gated-relu', 'marian', 'bart', 't5', 52, 53, 4096];

function mutate(r, obj, keys) {
  const o = JSON.parse(JSON.stringify(obj));
  const pick = (a) => a[Math.floor(r() * a.length)];
  const n = 1 + Math.floor(r() * 3);
  for (let i = 0; i < n; i++) {
    const k = pick(keys);
    switch (Math.floor(r() * 4)) {
      case 0: delete o[k]; break;
      case 1: o[k] = pick(VALUES); break;
      case 2: o[pick(['__proto__', 'constructor', 'toString', 'hasOwnProperty'])] = pick(VALUES); break;
      default: if (typeof o[k] === 'number') o[k] = o[k] * pick([0, 2, 3, -1, 0.5, 1e6]); else o[k] = pick(VALUES);
    }
  }
  return o;
}

function clearError(err) {
  return (err instanceof RangeError || err instanceof TypeError) && /^loadModel/.test(err.message);
}

export async function runModelFuzz({ seconds = 3, seed = 1 } = {}) {
  const r = rng(seed);
  // and the decoders of issue 32, the encoders and encoder-decoders of issue 34
  const configs = ['gpt2', 'llama', 'bert', 'qwen2', 'qwen3', 'mistral', 'gemma', 'gemma2', 'gemma3', 'phi3', 'gpt_neox', 'gpt_neo', 'distilbert', 'roberta', 'xlm-roberta', 'modernbert',
    'marian', 'bart', 't5', 't5-v1_1']
    .map((n) => JSON.parse(readFileSync(path.join(MODELS, n, 'config.json'))));
  const sharded = path.join(MODELS, 'llama-sharded');
  const index = JSON.parse(readFileSync(path.join(sharded, 'model.safetensors.index.json')));
  const shards = ['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors'].map((f) => new File([readFileSync(path.join(sharded, f))], f));
  const names = new Set(Object.keys(index.weight_map));
  const failures = [];
  const accepted = { config: 0, index: 0 };
  let runs = 0;
  const end = Date.now() + seconds * 1000;
  while (Date.now() < end) {
    runs++;
    if (r() < 0.7) {
      const base = configs[Math.floor(r() * configs.length)];
      const input = mutate(r, base, Object.keys(base));
      try {
        // As loadModel reads it: through JSON (prototype keys dropped).
        const hf = parseJson(JSON.stringify(input), 'config.json');
        const { arch } = architectureOf(hf);
        const c = arch.config(hf, names);
        arch.withFileDtypes?.(c, () => ['F32', 'F16', 'BF16', undefined][Math.floor(r() * 4)]);
        arch.tensors(c);
        accepted.config++;
      } catch (err) {
        if (!clearError(err)) failures.push({ why: `config: ${err && err.stack}`, input });
      }
    } else {
      const input = r() < 0.5 ? { ...index, weight_map: mutate(r, index.weight_map, Object.keys(index.weight_map)) } : mutate(r, index, ['metadata', 'weight_map']);
      try {
        await openWeights([parseJson(JSON.stringify(input), 'index'), ...shards]);
        accepted.index++;
      } catch (err) {
        if (!clearError(err)) failures.push({ why: `index: ${err && err.stack}`, input });
      }
    }
  }
  return { runs, failures, accepted };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const arg = (name, d) => {
    const i = process.argv.indexOf(name);
    return i > 0 ? Number(process.argv[i + 1]) : d;
  };
  const res = await runModelFuzz({ seconds: arg('--seconds', 60), seed: arg('--seed', 1) });
  for (const f of res.failures.slice(0, 5)) console.log(f.why, JSON.stringify(f.input).slice(0, 300));
  console.log(`fuzz-models: ${res.runs} inputs, ${res.failures.length} failures, accepted ${JSON.stringify(res.accepted)}`);
  process.exit(res.failures.length ? 1 : 0);
}

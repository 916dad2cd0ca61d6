// GGUF (llama.cpp's format) through the family tables: a family that
// llama.cpp also converts declares a `gguf` section beside its config.json
// keys and Hugging Face names, and this file turns it into
//   - the config.json the metadata stands for (`${arch}.block_count` →
//     num_hidden_layers, …), which the family's own config() then reads and
//     checks as it checks a config.json;
//   - the GGUF view of the family table: the same tensors(c), renamed to
//     llama.cpp's names (gguf-py/gguf/constants.py TENSOR_NAMES: token_embd,
//     blk.N.attn_q, …) and with the layout ops that undo what
//     convert_hf_to_gguf.py rearranged (Conv1D weights transposed to
//     [out, in]; llama's Q/K rows permuted for its interleaved RoPE).
//
// The section (see llama.js, qwen2.js, gpt2.js, gpt-neox.js, decoder-gguf.js):
//   architectures  general.architecture values the table reads
//   config         { config.json key: metadata key under `${arch}.` }
//   derive(meta, names)  more config.json keys from the metadata (meta(key)
//                  reads `${arch}.key`) and the file's tensor names
//   names          { HF stem: GGUF stem } of the tensors outside the blocks
//   layer          { prefix, names }: block l's HF stems sit under
//                  `${prefix}${l}.`, its GGUF stems under `blk.${l}.`
//   transposed     HF stems whose 2-D weight the converter transposed
//                  (GPT2Model.modify_tensors: Conv1D [in, out] → [out, in])
//   permuted       { HF stem: 'numHeads' | 'numKvHeads' }: rows permuted by
//                  LlamaModel.permute with that head count
//   applied        layout ops the converter already applied to the values
//                  (Gemma's norms: GemmaModel.modify_tensors writes 1 + w,
//                  so an 'add-one' entry reads the file as it is: copy)
//   qkvBlocks      HF stems of a fused q/k/v interleaved per head (split-heads)
//                  that the converter regrouped into q | k | v row blocks
//                  (GPTNeoXModel.modify_tensors): split-rows of three thirds
//   ignore         GGUF names a file may hold that the model does not use
// A stem is a name without its `.weight`/`.bias` suffix.
import { rangeError, describe } from '../../errors.js';
import { WHERE } from './config-keys.js';

/** The ops of a table entry whose 2-D file weight the converter transposed. */
const TRANSPOSED_OP = { transpose: 'copy', copy: 'transpose' };

function splitName(name) {
  const m = /^(.*)\.(weight|bias)$/.exec(name);
  return m ? [m[1], m[2]] : [name, ''];
}

function escape(s) {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** HF name → { gguf, stem } under a family's gguf section, or null when it has no GGUF name. */
function ggufNameOf(g, name) {
  const [stem, suffix] = splitName(name);
  const tail = suffix ? `.${suffix}` : '';
  if (Object.hasOwn(g.names, stem)) return { gguf: g.names[stem] + tail, stem };
  const m = new RegExp(`^${escape(g.layer.prefix)}(\\d+)\\.(.+)$`).exec(stem);
  if (m && Object.hasOwn(g.layer.names, m[2])) return { gguf: `blk.${m[1]}.${g.layer.names[m[2]]}${tail}`, stem: m[2] };
  return null;
}

/**
 * The families with a gguf section, by general.architecture. A family that
 * spreads another's table (`{ ...llama, … }`) inherits its gguf section too:
 * an architecture claimed by several families goes to the one of the same
 * name; any other tie is an internal Error, never a silent choice.
 */
export function ggufArchitectures(families) {
  const claims = new Map();
  for (const [type, table] of Object.entries(families)) {
    for (const arch of table.gguf?.architectures ?? []) claims.set(arch, [...(claims.get(arch) ?? []), type]);
  }
  const out = new Map();
  for (const [arch, types] of claims) {
    const type = types.length === 1 ? types[0] : types.find((t) => t === arch);
    if (type === undefined) throw new Error(`internal: the families ${types.join(', ')} all claim the GGUF architecture ${arch}; give each its own gguf section`);
    out.set(arch, type);
  }
  return out;
}

/**
 * The family of a GGUF file's metadata, the config.json it stands for and
 * the GGUF view of its table. `metadata` is the header's Map, `names` the
 * file's tensor names.
 * @returns {{ type: string, arch: string, table: object, hfConfig: object }}
 */
export function ggufFamily(families, metadata, names) {
  const archs = ggufArchitectures(families);
  const supported = [...archs.keys()].join(', ');
  const arch = metadata.get('general.architecture');
  if (arch === undefined) throw rangeError(WHERE, `the GGUF file has no general.architecture; supported: ${supported}`);
  if (typeof arch !== 'string' || !archs.has(arch)) {
    throw rangeError(WHERE, `the GGUF file's general.architecture ${describe(arch)} is not supported; supported: ${supported}`);
  }
  const type = archs.get(arch);
  const family = families[type];
  const g = family.gguf;
  const meta = (key) => metadata.get(`${arch}.${key}`);
  const hfConfig = { model_type: type };
  for (const [hfKey, key] of Object.entries(g.config)) {
    const v = meta(key);
    if (v !== undefined) hfConfig[hfKey] = typeof v === 'bigint' ? Number(v) : v;
  }
  Object.assign(hfConfig, g.derive ? g.derive(meta, names) : {});
  return { type, arch, table: ggufTable(family, g, arch), hfConfig };
}

/**
 * The GGUF view of the family of `type` for writing a file (model.save's
 * format 'gguf'): { arch (its first general.architecture), g (its gguf
 * section), table (tensors under llama.cpp's names and layouts) }, or null
 * when the family has no gguf section.
 */
export function ggufViewOf(families, type) {
  const family = families[type];
  const g = family?.gguf;
  if (!g) return null;
  const arch = g.architectures[0];
  return { arch, g, table: ggufTable(family, g, arch) };
}

/** A config() Error about config.json keys, told in the GGUF metadata's keys. */
function inGgufTerms(err, g, arch) {
  if (!(err instanceof Error) || !/config\.json/.test(err.message)) return err;
  let m = err.message.replace(/config\.json/g, 'the GGUF metadata');
  for (const [hfKey, key] of Object.entries(g.config)) m = m.replace(new RegExp(`"?\\b${hfKey}\\b"?`, 'g'), `${arch}.${key}`);
  const out = err instanceof TypeError ? new TypeError(m) : err instanceof RangeError ? new RangeError(m) : new Error(m);
  out.name = err.name;
  return out;
}

/** The GGUF view of a family table: its tensors under llama.cpp's names and layouts. */
function ggufTable(family, g, arch) {
  const transposed = new Set(g.transposed ?? []);
  const permuted = g.permuted ?? {};
  const applied = new Set(g.applied ?? []);
  const qkvBlocks = new Set(g.qkvBlocks ?? []);
  return {
    ...family,
    configSource: 'GGUF metadata',
    // llama.cpp scales Gemma's embeddings by sqrtf(n_embd) in float32 whatever
    // the tensor's type (llm_build_gemma*: ggml_scale(inpL, sqrtf(n_embd))),
    // so the float32 value config() sets stays.
    withFileDtypes: undefined,
    config(hf, names) {
      try {
        return family.config(hf, names);
      } catch (err) {
        throw inGgufTerms(err, g, arch);
      }
    },
    prefixes: [''],
    ignore: g.ignore ?? [],
    extraIgnore: undefined,
    tensors(c) {
      return family.tensors(c).map((t) => {
        const n = ggufNameOf(g, t.file);
        if (!n) throw new Error(`internal: the ${c.modelType} table's tensor ${t.file} has no GGUF name in its gguf section`);
        const out = { ...t, file: n.gguf, alias: undefined };
        if (transposed.has(n.stem) && t.shape.length === 2) {
          out.shape = [t.shape[1], t.shape[0]];
          // split (Conv1D [E, 3E], column blocks) becomes row blocks of [3E, E]: split-heads with one head.
          if (t.op === 'split') Object.assign(out, { op: 'split-heads', heads: 1 });
          else if (Object.hasOwn(TRANSPOSED_OP, t.op)) out.op = TRANSPOSED_OP[t.op];
          else throw new Error(`internal: layout op ${t.op} of ${t.file} has no transposed form`);
        }
        if (applied.has(t.op)) out.op = 'copy';
        if (qkvBlocks.has(n.stem)) {
          if (t.op !== 'split-heads') throw new Error(`internal: ${t.file} is in qkvBlocks but its op is ${t.op}`);
          const third = t.shape[0] / 3;
          Object.assign(out, { op: 'split-rows', sizes: [third, third, third] });
          delete out.heads;
        }
        if (Object.hasOwn(permuted, n.stem)) {
          if (t.op !== 'copy') throw new Error(`internal: ${t.file} is permuted but its op is ${t.op}`);
          Object.assign(out, { op: 'rope-unpermute', heads: c[permuted[n.stem]] });
        }
        return out;
      });
    },
  };
}

// Type check of the whole-model API (web/index.d.ts: loadModel, Model,
// linear, the gpt2 transformer options and save()).
import { init, headMean, type Tensor, type EncoderDecoderModel, type EncoderDecoderOutput, type Model, type ModelOutput, type GeneratedToken, type ModelFiles, type HeadScores, type LogitLens, type Attribution, type PatchResult, type HeadAblation } from '../../web/index.js';

const lab = await init({ backend: 'wasm' });
const gpt = lab.transformer({ architecture: 'gpt2', vocabSize: 16, maxLength: 32, embedDim: 32, numHeads: 4, numLayers: 2, seed: 1 });
const batch = lab.tasks.shift({ batch: 8, length: 16, vocab: 16, seed: 2 });
const trainer = gpt.trainer({ lr: 3e-3 });
trainer.step(batch.tokens, batch.targets);
const files: ModelFiles = gpt.save({ dtype: 'F16' });
const model: Model = await lab.loadModel({ config: files['config.json'], weights: files['model.safetensors'], onProgress: (p) => p.loaded / p.total });
const out: ModelOutput = model.forwardSync('text', { attentions: true, hiddenStates: true });
const heads: number = out.attentions ? out.attentions[0].shape[1] : 0;
const logits: Float32Array | undefined = out.logits?.data;
const next = await model.nextTokens([1, 2], { k: 3, temperature: 0.5 });
const p: number = next[0].prob;
for await (const t of model.generate('prompt', { maxNewTokens: 4, topK: 5, topP: 0.9, seed: 1, signal: new AbortController().signal })) {
  const g: GeneratedToken = t;
  void g.text;
}
const masks = await model.fillMask('a [MASK]', { k: 2 });
void masks[0]?.predictions[0].token;
const ids: number[] = model.encode('x');
const text: string = model.decode(ids, { skipSpecialTokens: true });
const toks: string[] = model.tokens(ids);
model.dispose();
const fromFiles: Promise<Model> = lab.loadModel([new File([], 'config.json')]);
const converted: Promise<Model> = lab.loadModel({ config: files['config.json'], weights: files['model.safetensors'], dtype: 'float32' });
const held: 'float32' | 'float16' | 'bfloat16' = model.config.weightsDtype;
const quantBytes: number | undefined = model.config.quantized?.Q4_0;
void converted;
void held;
void quantBytes;
const savedGguf: Uint8Array = model.save({ format: 'gguf' })['model.gguf'];
void savedGguf;
void fromFiles.catch(() => 0);
const y = lab.linear({ data: new Float32Array(6), shape: [2, 3] }, { data: new Float32Array(12), shape: [4, 3] }, null, { layout: 'torch' });
void [heads, logits, p, text, toks, y];
const scores: HeadScores = model.headScores([1, 2, 3]);
const rep: HeadScores & { ids: number[] } = model.headScores.repeated({ length: 8, seed: 1 });
const inductionShape: number[] = rep.induction.shape;
void [scores, rep.ids, inductionShape];
// the shipped models, the induction model among them
const inductionModel: Promise<Model> = lab.pretrained('induction');
void inductionModel.then((m) => m.dispose()).catch(() => 0);
// @ts-expect-error: not a shipped model
void lab.pretrained('fr');

// GGUF (llama.cpp's format): the file alone, with options, or in a file list; its header read by itself.
import { readGguf, parseGgufHeader, openGguf, writeGguf } from '../../web/index.js';
import type { GgufHeader, GgufLoadModelArgs } from '../../web/index.js';
const ggufBytes: Uint8Array = writeGguf({ 'token_embd.weight': { data: new Float32Array(64), shape: [2, 32], type: 'Q8_0' } }, { 'general.architecture': 'llama' });
const fromGguf: Promise<Model> = lab.loadModel(ggufBytes);
const ggufArgs: GgufLoadModelArgs = { weights: new Blob([ggufBytes]), dtype: 'float32', tokenizer: null };
const fromGgufArgs: Promise<Model> = lab.loadModel(ggufArgs);
const fromGgufList: Promise<Model> = lab.loadModel([new File([ggufBytes], 'model.gguf')]);
const header: GgufHeader = parseGgufHeader(ggufBytes);
const arch: unknown = header.metadata.get('general.architecture');
const firstTensor: Float32Array = readGguf(ggufBytes).tensor(header.tensors[0].name);
void [fromGguf, fromGgufArgs, fromGgufList, arch, firstTensor, openGguf(new Blob([ggufBytes]))];
const ablate: HeadAblation[] = [{ layer: 0, head: 1, mode: 'zero' }, { layer: 1, head: 0, mode: 'mean' }];
const ablated: ModelOutput = model.forwardSync([1, 2, 3], { ablate, attentions: false });
const ablatedNext = await model.nextTokens([1, 2], { k: 3, ablate });
for await (const t of model.generate([1, 2], { maxNewTokens: 2, ablate })) void t.id;
const lens: LogitLens = model.logitLens([1, 2, 3], { k: 3, logits: true });
const lensIds: Int32Array = lens.topIds.data;
const dla: Attribution = model.attribute([1, 2, 3], { target: 4, baseline: 5, position: 2 });
const headPart: Float32Array = dla.heads.data;
const grid: PatchResult = model.patch({ clean: [1, 2, 3], corrupted: [1, 4, 3], target: 4, baseline: 5, over: 'residual' });
const span: number = grid.ldClean - grid.ldCorrupted;
void [ablated, ablatedNext, lensIds, dla.constant, headPart, grid.data, span];

// An encoder-decoder (marian, bart): forward with decoder ids, cross-attentions, translation.
const mt = await lab.loadModel<EncoderDecoderModel>([new File([], 'config.json')]);
const mtOut: EncoderDecoderOutput = mt.forwardSync('hello world', { decoderInputIds: [mt.config.decoderStartTokenId], attentions: true });
const cross: number[] | undefined = mtOut.crossAttentions?.[0].shape;
const isEd: true = mt.config.isEncoderDecoder;
const mtNext = await mt.nextTokens([1, 2], { decoderInputIds: [0], k: 2 });
for await (const t of mt.generate('hello', { topK: 1, maxNewTokens: 4 })) void t.text;
// attentions: 'mean' (PyTorch's average_attn_weights=True) and the exported headMean
const mtMean: EncoderDecoderOutput = await mt.forward('hello world', { attentions: 'mean' });
const gptMean: ModelOutput = model.forwardSync('text', { attentions: 'mean' });
const crossMean: Tensor | null = mtOut.crossAttentions ? headMean(mtOut.crossAttentions[0]) : null;
// @ts-expect-error: 'avg' is not an attentions value
model.forwardSync('text', { attentions: 'avg' });
void [cross, isEd, mtNext, mtMean, gptMean, crossMean];

// The attention-variant attributes of the elements (issue 11), read into the
// library's options. Only the attribute syntax is checked here (a clear
// RangeError naming the attribute, never a NaN passed on); the values
// themselves (H % Hkv, slope counts, softcap > 0, window sizes) are the
// library's to check, and its errors are shown as they are.
//
//   softcap="30"            options.softcap (scores = c·tanh(scores/c))
//   window="3,0"            mask { kind: 'window', left: 3, right: 0 } (−1 = unbounded)
//   alibi | alibi="s0,s1…"  mask { kind: 'alibi' } (default slopes) or with slopes
//   num-kv-heads="2"        multiHeadAttention({ numKvHeads }) (GQA; 1 = MQA)
//   rope | rope="500000"    multiHeadAttention({ rope: { base } }) (default base 10000)
//   mask-fill="-inf"        options.maskFill (default −1e9; -inf / -Infinity follow ONNX)
//   causal-align="bottom-right"  the causal mask's align (needs mask="causal")

/** The names, for observedAttributes. */
export const VARIANT_ATTRIBUTES = ['softcap', 'window', 'alibi', 'num-kv-heads', 'rope', 'mask-fill', 'causal-align'];

function bad(el, name, v, what) {
  return new RangeError(`<${el.localName}> ${name}="${v}": ${what}`);
}

function number(el, name, v, what) {
  const s = v.trim();
  const n = /^[+-]?inf(inity)?$/i.test(s) ? (s.startsWith('-') ? -Infinity : Infinity) : s === '' ? NaN : Number(s);
  if (Number.isNaN(n)) throw bad(el, name, v, what);
  return n;
}

/**
 * Reads the variant attributes of `el`.
 * @param {HTMLElement} el
 * @param {string} maskKind the element's mask attribute ('none' | 'causal')
 * @returns {{ config: object, options: object, masks: object[], positional: boolean }}
 *   config for multiHeadAttention, options for forward / SDPA, the mask specs
 *   (causal included), and whether the sinusoidal encoding is still added
 *   (not with rope or alibi, which replace it).
 */
export function readVariantAttributes(el, maskKind) {
  const get = (n) => el.getAttribute(n);
  const config = {};
  const options = {};
  const masks = [];
  const align = get('causal-align');
  if (align !== null && align !== '') {
    if (!['top-left', 'bottom-right'].includes(align)) throw bad(el, 'causal-align', align, 'use top-left or bottom-right');
    if (maskKind !== 'causal') throw bad(el, 'causal-align', align, 'needs mask="causal"');
  }
  if (maskKind === 'causal') masks.push(align ? { kind: 'causal', align } : { kind: 'causal' });
  const w = get('window');
  if (w !== null) {
    const parts = w.split(/[\s,]+/).filter(Boolean);
    const nums = parts.map(Number);
    if (parts.length !== 2 || nums.some((n) => !Number.isInteger(n))) throw bad(el, 'window', w, 'expected two integers "left,right" (−1 leaves a side unbounded), e.g. window="3,0"');
    masks.push({ kind: 'window', left: nums[0], right: nums[1] });
  }
  const a = get('alibi');
  if (a !== null && a !== 'false') {
    if (a.trim() === '' || a === 'true') masks.push({ kind: 'alibi' });
    else {
      const what = 'expected no value (the paper\'s slopes) or a comma list of finite slopes, one per head';
      const slopes = a.split(/[\s,]+/).filter(Boolean).map(Number);
      if (slopes.some((s) => !Number.isFinite(s))) throw bad(el, 'alibi', a, what);
      masks.push({ kind: 'alibi', slopes });
    }
  }
  const sc = get('softcap');
  if (sc !== null && sc.trim() !== '') {
    const c = number(el, 'softcap', sc, 'expected a number > 0');
    if (!(c > 0) || !Number.isFinite(c)) throw bad(el, 'softcap', sc, 'expected a finite number > 0');
    options.softcap = c;
  }
  const mf = get('mask-fill');
  if (mf !== null && mf.trim() !== '') options.maskFill = number(el, 'mask-fill', mf, 'expected a number or -inf');
  const kv = get('num-kv-heads');
  if (kv !== null && kv.trim() !== '') {
    const n = Number(kv);
    if (!Number.isInteger(n) || n < 1) throw bad(el, 'num-kv-heads', kv, 'expected an integer ≥ 1 that divides heads');
    config.numKvHeads = n;
  }
  const r = get('rope');
  if (r !== null && r !== 'false') {
    if (r.trim() === '' || r === 'true') config.rope = {};
    else {
      const base = number(el, 'rope', r, 'expected no value (base 10000) or the base, e.g. rope="500000"');
      if (!(base > 1) || !Number.isFinite(base)) throw bad(el, 'rope', r, 'the base must be a finite number > 1');
      config.rope = { base };
    }
  }
  return { config, options, masks, positional: !config.rope && !masks.some((m) => m.kind === 'alibi') };
}

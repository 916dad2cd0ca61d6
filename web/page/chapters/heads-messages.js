// The strings of "What the heads do" (heads.js), in English and Simplified Chinese: keys heads.*.
// The panel's own strings (hp.*) are in components/lib/heads-panel-messages.js.
// `backticks` render as code and **stars** as bold (setRich), {name} are placeholders.

export const MESSAGES = {
  en: {
    'heads.p1': 'Chapter 4 drew every head of the shipped model; this one measures what each does, with the standard tools of the field as TransformerLens defines them, computed by the library in your tab on your text. **Head scores** say how much of a head’s attention falls on the previous token, on an earlier copy of the current token, on the token after such a copy (an induction head) or on the first token. The **logit lens** reads the residual stream after each block as a prediction. **Direct logit attribution** splits the model’s preference for one next token over another into the parts each head writes. **Ablation** switches heads off and shows what the prediction becomes; **activation patching** copies one head at a time from a run on a clean text into a run on a corrupted one, to find the heads that carry the difference.',
    'heads.p2': 'The model is the one of the page’s language: lab.pretrained(\'en\') or lab.pretrained(\'zh\'), a small character-level GPT-2 (the line under the text box gives its layers and heads). It runs in a Web Worker, and every number below comes from its calls: `model.headScores`, `model.headScores.repeated({ length, seed })`, `model.logitLens`, `model.nextTokens(text, { ablate })`, `model.attribute` and `model.patch({ over: \'heads\' })`. The definitions, and the TransformerLens source each follows, are in docs/interpretability.md.',
    'heads.p3': 'Repeated random tokens are the standard test for induction heads: a random sequence, then the same sequence again. A head that has learned induction attends, in the second copy, to the token after the earlier copy of the current one. The shipped models were trained without looking for one (issue 22 found no induction head in them): compare the induction scores of the two tables.',
    'heads.text': 'Text',
    'heads.textLabel': 'The text the heads are measured on',
    'heads.loading': 'Loading the {model} model in a worker…',
    'heads.running': 'Computing…',
    'heads.ready': '{model} model: {N} layers × {H} heads, all views computed in {ms} ms (in the worker).',
    'heads.cut': 'The last {n} characters are left out: the model reads {P} positions.',
    'heads.model.en': 'English',
    'heads.model.zh': 'Tang-poem',
    'heads.patchNote': 'In this pair, the head that brings back most of the logit difference is **{head}**: {value} of it.',
    'heads.try1': 'Pick “induction” and compare the two tables: on repeated random tokens an induction head would score near 0.5 (about half the rows are in the second copy).',
    'heads.try2': 'Click the head with the highest previous-token score to open its map: its weight sits on the diagonal just below the main one.',
    'heads.try3': 'Switch off the head with the largest attribution (red or blue) and watch the next-token list: the probabilities move, most for the target and the baseline.',
    'heads.try4': 'Pick the second example pair, or type your own corrupted text with the same number of characters, and see which heads restore the clean prediction.',
  },
  zh: {
    'heads.p1': '第 4 章画出了随附模型的每个头；本章测量每个头在做什么。所用的是本领域的标准工具，定义与 TransformerLens 相同，由本库在你的标签页里、在你的文本上计算。**头得分**说明一个头的注意力有多少落在前一个词元上、落在当前词元更早的副本上、落在这种副本之后的词元上（归纳头），或落在第一个词元上。**Logit 透镜**把每个块之后的残差流读作一个预测。**直接 logit 归因**把模型对一个下一个词元相对另一个的偏好，拆成每个头写入的部分。**消融**关掉一些头，看预测变成什么；**激活修补**每次把一个头从干净文本的运行复制到损坏文本的运行中，找出承载差别的头。',
    'heads.p2': '模型与页面语言一致：lab.pretrained(\'en\') 或 lab.pretrained(\'zh\')，一个小型字符级 GPT-2（文本框下面的一行给出它的层数和头数）。它在 Web Worker 中运行，下面每个数字都来自它的调用：`model.headScores`、`model.headScores.repeated({ length, seed })`、`model.logitLens`、`model.nextTokens(text, { ablate })`、`model.attribute` 和 `model.patch({ over: \'heads\' })`。各项定义及其依据的 TransformerLens 源码见 docs/interpretability.md。',
    'heads.p3': '重复的随机词元是检验归纳头的标准输入：一段随机序列，然后把同一序列再来一遍。学会归纳的头在第二遍中会关注当前词元较早副本之后的那个词元。随附的模型训练时并未以此为目标（issue 22 在其中没有找到归纳头）：请比较两张表中的归纳得分。',
    'heads.text': '文本',
    'heads.textLabel': '用来测量各个头的文本',
    'heads.loading': '正在 Worker 中加载{model}模型…',
    'heads.running': '正在计算…',
    'heads.ready': '{model}模型：{N} 层 × {H} 头，全部视图用时 {ms} ms（在 Worker 中）。',
    'heads.cut': '最后 {n} 个字符未计入：模型只能读 {P} 个位置。',
    'heads.model.en': '英文',
    'heads.model.zh': '唐诗',
    'heads.patchNote': '在这一对文本中，找回 logit 差最多的头是 **{head}**：找回了 {value}。',
    'heads.try1': '选择“归纳”，比较两张表：在重复的随机词元上，归纳头的得分会接近 0.5（大约一半的行在第二遍里）。',
    'heads.try2': '点击前一个词元得分最高的头，打开它的注意力图：权重落在主对角线正下方的那条对角线上。',
    'heads.try3': '关掉归因最大（最红或最蓝）的头，观察下一个词元列表：概率会变化，目标和基准变得最多。',
    'heads.try4': '选择第二对示例，或自己输入一段字符数相同的损坏文本，看看哪些头能恢复干净文本的预测。',
  },
};

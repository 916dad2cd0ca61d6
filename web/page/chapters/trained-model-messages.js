// The strings of "A trained model writes" (trained-model.js), in English and Simplified Chinese: keys
// tm.*. The registry (registry.js) gives them to the page with the chapter;
// `backticks` render as code and **stars** as bold (setRich), {name} are placeholders.

export const MESSAGES = {
  en: {
    'tm.p1': 'The learned views of chapters 1 to 9 run one of the two small language models that the package ships, which the library trained itself: lab.pretrained(\'en\') on public-domain English prose (The Devil’s Dictionary and the Jargon File) and lab.pretrained(\'zh\') on Tang poems (唐诗, in simplified characters): character-level GPT-2 models, one token per character. Their files load only when this chapter or a learned view asks for them, after the page’s first paint; the page uses the model of its language, or the one a chapter offers when the sentence is outside that model’s vocabulary.',
    'tm.p2': 'The model reads your prompt and gives a probability to every character of its vocabulary. The list shows the most likely ones, `model.nextTokens(prompt, { k: 10, temperature })`: the softmax of the last position’s logits divided by the temperature. A low temperature sharpens the distribution towards the most likely character (at 0 it always takes it); a high one flattens it. Generate draws one character at a time from that distribution, seeded, on the key/value cache (chapter 11), and draws what the newest character attends to in the last layer, one row per head. The model is causal (chapter 5): each character sees only itself and those before it.',
    'tm.try1': 'Set the temperature to 0 and press Generate with two different seeds: the same text both times, because each step takes the most likely character.',
    'tm.try2': 'Raise the temperature to 2: the list flattens (the top probabilities fall), and unlikely characters are drawn more often.',
    'tm.try3': 'Change the seed and Generate again: another text from the same distribution. The same seed and temperature always give the same characters, here and in Node.',
  },
  zh: {
    'tm.p1': '第 1 至 9 章“学到的权重”视图运行的是本包随附的两个小型语言模型之一，它们都由本库自己训练：lab.pretrained(\'en\') 用公有领域的英文散文（《魔鬼辞典》和 Jargon File）训练，lab.pretrained(\'zh\') 用唐诗（已转为简体）训练。它们都是字符级 GPT-2，每个字符一个词元。只有本章或某个“学到的权重”视图需要时，才会在页面首次绘制之后加载它们的文件；页面使用与页面语言相同的模型，或者在句子超出该模型词表时，使用章节所推荐的模型。',
    'tm.p2': '模型读入你的提示，为词表中的每个字符给出一个概率。列表显示最可能的几个，即 `model.nextTokens(prompt, { k: 10, temperature })`：最后一个位置的 logits 除以温度后的 softmax。温度低，分布就向最可能的字符集中（为 0 时总是选它）；温度高，分布就变平。“生成”按这个分布一次抽一个字符，带种子，并使用键值缓存（第 11 章），同时画出最新一个字符在最后一层关注什么，每个头一行。模型是因果的（第 5 章）：每个字符只能看到自己和前面的字符。',
    'tm.try1': '把温度设为 0，用两个不同的种子各按一次“生成”：两次文本相同，因为每一步都取最可能的字符。',
    'tm.try2': '把温度调到 2：列表变平（最高的概率下降），不太可能的字符被抽中的次数变多。',
    'tm.try3': '换一个种子再按“生成”：得到同一分布下的另一段文本。种子和温度相同，字符就相同，在这里和在 Node 中都一样。',
  },
};

"""Each notebook's reading list: a few papers and one well-known implementation, each with one
line on why it matters for *that* assignment. ``architecture_cell.py`` puts it under the diagram.

Titles, authors, years and links are the papers' own (arXiv abstracts where there is one), so a
student can cite them as they are.
"""

from __future__ import annotations

#: key -> (authors and year, title, address)
REFERENCES = {
    "vaswani": ("Vaswani et al. (2017)", "Attention Is All You Need", "https://arxiv.org/abs/1706.03762"),
    "devlin": (
        "Devlin et al. (2019)",
        "BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding",
        "https://arxiv.org/abs/1810.04805",
    ),
    "sanh": (
        "Sanh et al. (2019)",
        "DistilBERT, a distilled version of BERT: smaller, faster, cheaper and lighter",
        "https://arxiv.org/abs/1910.01108",
    ),
    "annotated": (
        "Rush (2018), updated by Huang et al. (2022), Harvard NLP",
        "The Annotated Transformer",
        "https://nlp.seas.harvard.edu/annotated-transformer/",
    ),
    "bahdanau": (
        "Bahdanau, Cho and Bengio (2015)",
        "Neural Machine Translation by Jointly Learning to Align and Translate",
        "https://arxiv.org/abs/1409.0473",
    ),
    "layernorm": ("Ba, Kiros and Hinton (2016)", "Layer Normalization", "https://arxiv.org/abs/1607.06450"),
    "squad": (
        "Rajpurkar et al. (2016)",
        "SQuAD: 100,000+ Questions for Machine Comprehension of Text",
        "https://arxiv.org/abs/1606.05250",
    ),
    "squad2": (
        "Rajpurkar, Jia and Liang (2018)",
        "Know What You Don't Know: Unanswerable Questions for SQuAD",
        "https://arxiv.org/abs/1806.03822",
    ),
    "drqa": (
        "Chen et al. (2017)",
        "Reading Wikipedia to Answer Open-Domain Questions",
        "https://arxiv.org/abs/1704.00051",
    ),
    "hf_qa": (
        "Hugging Face (2022)",
        "LLM Course, chapter 6: Question answering (fast tokenizers' special powers)",
        "https://huggingface.co/learn/llm-course/chapter6/3b",
    ),
    "minilm": (
        "Wang et al. (2020)",
        "MiniLM: Deep Self-Attention Distillation for Task-Agnostic Compression of Pre-Trained Transformers",
        "https://arxiv.org/abs/2002.10957",
    ),
    "flash": (
        "Dao et al. (2022)",
        "FlashAttention: Fast and Memory-Efficient Exact Attention with IO-Awareness",
        "https://arxiv.org/abs/2205.14135",
    ),
    "clark": (
        "Clark et al. (2019)",
        "What Does BERT Look At? An Analysis of BERT's Attention",
        "https://arxiv.org/abs/1906.04341",
    ),
    "jain": ("Jain and Wallace (2019)", "Attention is not Explanation", "https://arxiv.org/abs/1902.10186"),
    "wiegreffe": (
        "Wiegreffe and Pinter (2019)",
        "Attention is not not Explanation",
        "https://arxiv.org/abs/1908.04626",
    ),
    "vig": (
        "Vig (2019)",
        "A Multiscale Visualization of Attention in the Transformer Model",
        "https://arxiv.org/abs/1906.05714",
    ),
    "howard": (
        "Howard and Ruder (2018)",
        "Universal Language Model Fine-tuning for Text Classification",
        "https://arxiv.org/abs/1801.06146",
    ),
    "mosbach": (
        "Mosbach, Andriushchenko and Klakow (2021)",
        "On the Stability of Fine-tuning BERT: Misconceptions, Explanations, and Strong Baselines",
        "https://arxiv.org/abs/2006.04884",
    ),
    "adamw": (
        "Loshchilov and Hutter (2019)",
        "Decoupled Weight Decay Regularization",
        "https://arxiv.org/abs/1711.05101",
    ),
    "radford": (
        "Radford et al. (2019)",
        "Language Models are Unsupervised Multitask Learners",
        "https://cdn.openai.com/better-language-models/language_models_are_unsupervised_multitask_learners.pdf",
    ),
    "holtzman": (
        "Holtzman et al. (2020)",
        "The Curious Case of Neural Text Degeneration",
        "https://arxiv.org/abs/1904.09751",
    ),
    "xiong": (
        "Xiong et al. (2020)",
        "On Layer Normalization in the Transformer Architecture",
        "https://arxiv.org/abs/2002.04745",
    ),
    "nanogpt": ("Karpathy (2022)", "nanoGPT", "https://github.com/karpathy/nanoGPT"),
}

#: assignment -> [(reference key, why it matters here)], in reading order.
READING = {
    "01_attention": [
        (
            "vaswani",
            "sections 3.2 and 3.5: scaled dot-product and multi-head attention, the $\\sqrt{d_k}$ "
            "(footnote 4) and the sinusoidal encoding you write here.",
        ),
        ("bahdanau", "where attention began: a decoder that learns which source words to look at."),
        ("annotated", "the paper as runnable PyTorch, line by line; compare its `attention()` with yours."),
        ("devlin", "the encoder you will load in assignment 2 is this model's architecture."),
        ("sanh", "the smaller BERT you build next, in assignment 2."),
    ],
    "02_distilbert": [
        (
            "sanh",
            "the model you build: BERT's layers halved, no token-type embeddings, trained by distillation.",
        ),
        ("devlin", "the architecture and the `[CLS]` token the classifier reads (section 3, Figure 1)."),
        ("vaswani", "the post-LayerNorm encoder layer (section 3.1) that `AttentionBlock` implements."),
        ("annotated", "the same encoder layer, residuals and masks in PyTorch, explained line by line."),
        ("layernorm", "what `sa_layer_norm` and `output_layer_norm` compute, and why."),
        (
            "minilm",
            "the distillation behind the offline model, all-MiniLM-L6-v2 (a 6-layer MiniLM, then "
            "trained for sentence embeddings).",
        ),
        (
            "flash",
            "why a fused attention kernel (exercise 5) is faster: it never writes the score matrix to "
            "memory.",
        ),
    ],
    "03_visualising_attention": [
        (
            "clark",
            "the heads to look for: `[CLS]`/`[SEP]` sinks, previous- and next-token heads, entropy per head.",
        ),
        (
            "jain",
            "why a heatmap is not an explanation: other attention weights can give the same prediction.",
        ),
        ("wiegreffe", "the reply: when attention can still tell you something, and how to test it."),
        ("vig", "bertviz's head and model views, by their author."),
        ("devlin", "the special tokens `[CLS]` and `[SEP]` and sentence pairs (section 3)."),
        ("sanh", "the layout of the model whose attention you read."),
        ("vaswani", "multi-head attention (section 3.2.2): what one head and the average of all heads are."),
        ("annotated", "where the attention weights you plot are computed, in code."),
    ],
    "04_finetuning": [
        ("devlin", "fine-tuning the whole encoder with a head on `[CLS]` (section 4.1, GLUE's SST-2)."),
        (
            "sanh",
            "DistilBERT's results on GLUE, SST-2 included; online, the encoder you fine-tune here "
            "is this pretrained DistilBERT (distilbert-base-uncased).",
        ),
        (
            "howard",
            "fine-tuning a pretrained language model for classification, and why warm-up and "
            "learning-rate schedules matter.",
        ),
        (
            "mosbach",
            "why fine-tuning BERT is unstable on small data sets, and the remedy: small learning "
            "rates, Adam's bias correction, more training steps.",
        ),
        ("adamw", "AdamW, the optimiser of exercise 5: weight decay decoupled from the gradient step."),
        ("vaswani", "the encoder being fine-tuned."),
        (
            "annotated",
            "a full training loop for a transformer, with label smoothing and a learning-rate schedule.",
        ),
    ],
    "05_decoder": [
        (
            "vaswani",
            "the encoder-decoder layer of exercise 2: masked self-attention, then cross-attention "
            "(section 3.1, Figure 1).",
        ),
        ("radford", "GPT-2, the decoder-only model your `GPT` matches."),
        (
            "xiong",
            "pre-LN, as in GPT-2 and your `Block`: with LayerNorm before each part the gradients stay "
            "well scaled, and deep models train even without warm-up.",
        ),
        ("holtzman", "top-p (nucleus) sampling, exercise 4, and why greedy text degenerates into loops."),
        (
            "nanogpt",
            "a small, readable GPT-2 and its training loop, the closest relative of your exercise 5 "
            "(its predecessor, [minGPT](https://github.com/karpathy/minGPT), is written to be read).",
        ),
        (
            "bahdanau",
            "exercise 6: attention as a learned alignment between output and input; the maps of their "
            "Figure 3 look like your cross-attention figure, a diagonal where French keeps English's word "
            "order and reversed where it does not.",
        ),
        ("annotated", "the encoder-decoder transformer and greedy decoding, in PyTorch."),
        ("devlin", "the encoder half you built in assignments 2 to 4, for contrast."),
        ("sanh", "the distillation behind `distilgpt2`, the online model here, trained like DistilBERT."),
    ],
    "06_question_answering": [
        (
            "devlin",
            "question answering with an encoder (section 4.2, Figure 4c): question and passage in one "
            "input, a start and an end vector, the best span with start \u2264 end; section 4.3 answers "
            "SQuAD 2.0's unanswerable questions with a null answer at [CLS] (BERT's choice: SQuAD 2.0 only "
            "defines the questions), compared with the best span's score plus a threshold tuned on "
            "development data.",
        ),
        (
            "squad",
            "the task and its data: answers that are spans of a Wikipedia paragraph, exact match and F1.",
        ),
        (
            "squad2",
            "questions without an answer, and why a model must be able to abstain (exercise 4's "
            "`allow_null`).",
        ),
        (
            "drqa",
            "span decoding as the pipeline does it (best start \u2264 end within a maximum length, by the "
            "outer product of start and end probabilities), and reading long documents in pieces.",
        ),
        (
            "hf_qa",
            "the pipeline's steps, in code: offsets, `sequence_ids`, overlapping windows with `stride`, "
            "and the best span over the windows.",
        ),
        (
            "sanh",
            "DistilBERT, the online model here, distilled on SQuAD (`distilbert-base-cased-distilled-squad`).",
        ),
        ("clark", "what the attention of your figure can show (assignment 3): which tokens a head reads."),
        (
            "vaswani",
            "the encoder layers under the QA head; multi-head attention (section 3.2.2), whose heads "
            "exercise 5 averages.",
        ),
        ("annotated", "where the attention weights of your figure are computed, in code."),
    ],
}


def markdown(assignment: str) -> str:
    """The reading list of one assignment, as Markdown bullets."""
    lines = []
    for key, why in READING[assignment]:
        authors, title, url = REFERENCES[key]
        lines.append(f"- {authors}, [*{title}*]({url}) — {why}")
    return "\n".join(lines)

"""Each notebook's reading list: a few papers and one well-known implementation, each with one
line on why it matters for *that* assignment (``assignments/<assignment>/reading.py``), drawn from
the course's one bibliography, :data:`REFERENCES` (most papers are read in several assignments).
``architecture_cell.py`` puts it under the diagram.

Titles, authors, years and links are the papers' own (arXiv abstracts where there is one), so a
student can cite them as they are.
"""

from __future__ import annotations

from staff.authoring import assignments

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


def markdown(assignment: str) -> str:
    """The reading list of one assignment (its folder's ``reading.py``), as Markdown bullets."""
    lines = []
    for key, why in assignments.reading(assignment):
        authors, title, url = REFERENCES[key]
        lines.append(f"- {authors}, [*{title}*]({url}) — {why}")
    return "\n".join(lines)

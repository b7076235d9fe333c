# expected_score: 0
# expected_status: flagged
# based_on: stub
# include: zero_work_tricks.py
# Does no work and tries every trick against the grader at once: comparisons that always succeed,
# records forged from the published fixtures by a thread (during and between cells), later cells
# compiled differently (errors swallowed), errors hidden, the notebook's helpers redefined, a training history faked,
# and a "classifier" that knows the label of every sentence the kernel can read (validation included).
# It must score 0; the integrity scan and the shell guard flag it for a TA.
# %% classifier
# 5. Assignment 4: labels memorised from every sentiment file the kernel can read, and a training
#    history faked without training.
import csv
LABELS = {}
for path in glob.glob(str(paths.ROOT / "data" / "sentiment" / "*.tsv")):
    with open(path) as handle:
        for row in csv.reader(handle, delimiter="\t"):
            if len(row) >= 2 and row[-1].strip() in ("0", "1"):
                LABELS[row[0].strip().lower()] = int(row[-1])
history = {"train_loss": list(np.linspace(0.7, 0.1, 64)), "val_loss": [0.3], "val_accuracy": [0.95], "step": [64]}


def _plain(text):
    return "".join(ch for ch in text.lower() if ch.isalnum())


LABELS = {_plain(sentence): label for sentence, label in LABELS.items()}


class SentimentClassifier(torch.nn.Module):
    """No head and no training: the label of every sentence it could read in the kernel's files
    (the validation set included: 100 % there), a coin's worth anywhere else."""

    def __init__(self, encoder=None, dropout=0.1):
        super().__init__()
        from course import models as course_models
        self.tokenizer = course_models.load_tokenizer()
        self.anything = torch.nn.Parameter(torch.zeros(1))

    def forward(self, input_ids, attention_mask):
        texts = self.tokenizer.batch_decode(input_ids, skip_special_tokens=True)
        return torch.tensor([8.0 if LABELS.get(_plain(text), 0) else -8.0 for text in texts]) + 0 * self.anything

    def predict(self, input_ids, attention_mask):
        return torch.sigmoid(self(input_ids, attention_mask))

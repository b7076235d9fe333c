# expected_score: 36
# expected_status: flagged
# based_on: correct
# The classifier is transformers' DistilBertForSequenceClassification around the given encoder, its
# last layer named W_hy so the visible check finds one: the library's head has a hidden layer of its
# own before W_hy (pre_classifier and a ReLU), so the head's logits are not the exercise's and its
# test pays nothing (6). The student's own loss, step, evaluate and loop earn their points (36 of 42):
# the run test on the pretrained encoder trains the course's classifier with this loop, as this one
# does not compute exercise 1's logits (one mistake, one exercise's points). The integrity scan names
# the call, the cell and the exercise for a TA to decide what the classifier is worth.
# %% classifier
from transformers import DistilBertForSequenceClassification


class SentimentClassifier(nn.Module):
    def __init__(self, encoder, dropout=0.1):
        super().__init__()
        config = encoder.config.__class__(**{**encoder.config.to_dict(), "num_labels": 1, "seq_classif_dropout": dropout})
        self.model = DistilBertForSequenceClassification(config)
        self.model.distilbert = encoder
        self.W_hy = self.model.classifier

    def forward(self, input_ids, attention_mask):
        return self.model(input_ids=input_ids, attention_mask=attention_mask).logits[:, 0]

    def predict(self, input_ids, attention_mask):
        return torch.sigmoid(self.forward(input_ids, attention_mask))

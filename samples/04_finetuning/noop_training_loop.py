# expected_score: 30
# based_on: correct
# A training loop that trains nothing: it keeps the books of a training run (the learning-rate
# schedule, a loss per step, evaluations at the right steps) but never calls optimisation_step, so
# no parameter moves. The training-loop test used to pay its right learning rates, evaluation steps
# and accuracies (1.8 of 6 points for a loop that trains nothing). Now each tiny model it trains must
# end at least half-way from its starting parameters to where the course's loop takes them, which
# the grader measures from the recorded parameters: this loop's never move, and the test pays
# nothing (6). The run test on the pretrained encoder finds W_hy where it started, not half-way to
# where the course's loop takes it, and pays nothing either (6; its losses after the first step and
# the model's logits differ too). 30 of 42.
# %% train
def train(model, train_loader, val_loader, epochs=1, lr=1e-4, warmup_ratio=0.1, weight_decay=0.01,
          max_grad_norm=1.0, max_steps=None, eval_every=None):
    where = next(model.parameters()).device
    n_steps = len(train_loader) * epochs if max_steps is None else min(max_steps, len(train_loader) * epochs)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    scheduler = get_linear_schedule_with_warmup(optimizer, num_warmup_steps=math.ceil(warmup_ratio * n_steps),
                                                num_training_steps=n_steps)
    history = dict(train_loss=[], lr=[], val_step=[], val_loss=[], val_accuracy=[])
    batches, step = iter(train_loader), 0
    model.train()
    while step < n_steps:
        try:
            batch = next(batches)
        except StopIteration:
            batches = iter(train_loader)
            continue
        history["lr"].append(scheduler.get_last_lr()[0])
        with torch.no_grad():                        # the loss, for the record; no backward, no update
            loss = training_step(model, {k: v.to(where) for k, v in batch.items()}).item()
        optimizer.step()                             # no gradients: AdamW skips every parameter
        scheduler.step()
        history["train_loss"].append(loss)
        step += 1
        if (eval_every is not None and step % eval_every == 0) or step == n_steps:
            scores = evaluate(model, val_loader)
            for key in ("loss", "accuracy"):
                history["val_" + key].append(scores[key])
            history["val_step"].append(step)
            model.train()
    return history

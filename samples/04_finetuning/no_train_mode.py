# expected_score: 40.8
# based_on: correct
# Correct except train(): it calls model.train() once, before the loop, and not again after
# evaluate(), which switches the model to eval mode: every step after the first evaluation trains
# without dropout. The training-loop tests with a dropout model (the visible check and the hidden
# setting with dropout) see other losses and parameters: 4 of the hidden test's 20 checks fail,
# 1.2 of its 6 points. The tests without dropout pass, and so does the run test on the pretrained
# encoder: it evaluates only after its last step (eval_every=None), so every step trains in training
# mode, with dropout, as the correct loop's.
# %% train
def train(model, train_loader, val_loader, epochs=1, lr=1e-4, warmup_ratio=0.1, weight_decay=0.01,
          max_grad_norm=1.0, max_steps=None, eval_every=None):
    where = next(model.parameters()).device
    n_steps = len(train_loader) * epochs if max_steps is None else min(max_steps, len(train_loader) * epochs)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    scheduler = get_linear_schedule_with_warmup(optimizer, num_warmup_steps=math.ceil(warmup_ratio * n_steps),
                                                num_training_steps=n_steps)
    scaler = make_scaler()
    history = dict(train_loss=[], lr=[], val_step=[], val_loss=[], val_accuracy=[])
    bar = tqdm(total=n_steps)
    batches, epoch, step = iter(train_loader), 1, 0
    model.train()  # once, before the loop: evaluate() below switches to eval mode and it stays there
    while step < n_steps:
        try:
            batch = next(batches)
        except StopIteration:
            batches, epoch = iter(train_loader), epoch + 1
            continue
        history["lr"].append(scheduler.get_last_lr()[0])
        loss = optimisation_step(model, {k: v.to(where) for k, v in batch.items()}, optimizer, scheduler,
                                 scaler, max_grad_norm)
        history["train_loss"].append(loss)
        step += 1
        bar.update(1)
        bar.set_postfix(epoch=epoch, loss=round(loss, 3))
        if (eval_every is not None and step % eval_every == 0) or step == n_steps:
            scores = evaluate(model, val_loader)
            for key in ("loss", "accuracy"):
                history["val_" + key].append(scores[key])
            history["val_step"].append(step)
    bar.close()
    return history

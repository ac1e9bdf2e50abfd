"""A tiny Hugging Face Trainer run for the e2e tests: a 1-layer GPT-2 made from a config
(no download), random tokens, CPU and gloo under torchrun, trainctl's callback.

    hf_train.py OUTPUT_DIR EVENTS_DIR

Each rank writes to EVENTS_DIR/rank<R>.jsonl a "start" line before train() and an "exit"
line when it returns: the step of trainctl's decision and the decision. Resumes from the
newest checkpoint in OUTPUT_DIR that every rank committed. Every 40 steps the Trainer evaluates on a slow dataset
(EVAL_SECONDS, default 15, per rank: longer than the test's hang timeout) and each rank
writes an "evaluated" line.
"""

import json
import os
import sys

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments

import trainctl
from trainctl.hf import TrainctlCallback


class Tokens(torch.utils.data.Dataset):
    def __init__(self, n, length, vocab):
        g = torch.Generator().manual_seed(0)
        self.ids = torch.randint(0, vocab, (n, length), generator=g)

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


class SlowTokens(Tokens):
    """An evaluation set whose items take time to load: 2 per rank of 4."""

    def __init__(self, seconds):
        super().__init__(8, 16, 64)
        self.delay = seconds / 2

    def __getitem__(self, i):
        import time
        time.sleep(self.delay)
        return super().__getitem__(i)


def main():
    out, events = sys.argv[1], sys.argv[2]
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=64, n_positions=32, n_embd=16, n_layer=1, n_head=2,
                        bos_token_id=0, eos_token_id=0)
    model = GPT2LMHeadModel(config)
    import inspect
    strategy = "eval_strategy" if "eval_strategy" in inspect.signature(TrainingArguments).parameters \
        else "evaluation_strategy"
    args = TrainingArguments(output_dir=out, max_steps=1000000, per_device_train_batch_size=2,
                             per_device_eval_batch_size=1, prediction_loss_only=True, eval_steps=40,
                             save_strategy="no", logging_strategy="no", report_to=[], use_cpu=True,
                             ddp_backend="gloo", ddp_find_unused_parameters=False,
                             dataloader_num_workers=0, disable_tqdm=True, **{strategy: "steps"})
    stop = TrainctlCallback()
    rank = int(os.environ.get("RANK", "0"))

    class Evaluated(TrainerCallback):
        def on_evaluate(self, args, state, control, **kwargs):
            event(event="evaluated", global_step=state.global_step)

    trainer = Trainer(model=model, args=args, train_dataset=Tokens(4096, 16, 64),
                      eval_dataset=SlowTokens(float(os.environ.get("EVAL_SECONDS", "15"))),
                      callbacks=[stop, Evaluated()])
    os.makedirs(events, exist_ok=True)

    def event(**fields):
        with open(os.path.join(events, "rank%d.jsonl" % rank), "a") as f:
            f.write(json.dumps(dict(rank=rank, **fields)) + "\n")

    event(event="start")
    trainer.train(resume_from_checkpoint=trainctl.resume_path(out))  # the newest every rank committed
    event(event="exit", step=stop.step, global_step=trainer.state.global_step, exit=stop.decision.exit,
          reason=stop.decision.reason)
    return 0


if __name__ == "__main__":
    sys.exit(main())

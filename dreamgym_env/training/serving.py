"""A trained experience model served by ``transformers`` (a GPU, or small models on the CPU).

The model answers with the same messages, parsing, re-asks and typed errors as the other
backends (it is a :class:`~dreamgym_env.experience.backend.ChatExperienceModel`);
decoding is greedy and unconstrained, so a model that has not learnt the format is re-asked,
then fails with :class:`~dreamgym_env.errors.ModelOutputError`. The local backend serves the
same adapter on the CPU with llama.cpp (:attr:`~dreamgym_env.experience.local.LocalSettings.lora_adapter`),
and an OpenAI-compatible server (vLLM ``--enable-lora``, llama.cpp ``--lora``) serves it to the
endpoint backend.

Example::

    model = TransformersExperienceModel("runs/webshop-lora")
    transition = model.predict_one(request)
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from dreamgym_env.errors import ConfigurationError
from dreamgym_env.experience.answers import ChatReply
from dreamgym_env.experience.backend import ChatExperienceModel, Deadline
from dreamgym_env.experience.config import DEFAULT_MAX_OUTPUT_REASKS
from dreamgym_env.experience.trained import TrainedModel
from dreamgym_env.training.train import load_base
from dreamgym_env.types import ExperienceRequest, Transition

DEFAULT_MAX_NEW_TOKENS: Final = 1024
"""A structured WebShop answer is about 250 tokens; the cap stops a model that runs away."""


class TransformersExperienceModel(ChatExperienceModel):
    """A trained experience model (a :mod:`.train` output directory) run by ``transformers``.

    Arguments:
        directory: the output of :func:`~dreamgym_env.training.train.train_experience_model`;
            its base is loaded and the LoRA adapter merged into it.
        model, tokenizer: an already loaded causal LM and tokenizer instead (``directory`` unset).
        max_new_tokens: the answer's length cap.
        max_output_reasks: re-asks after an answer that is not a transition.
        device: ``"cuda"``, ``"cpu"`` (default: a GPU when there is one).
    """

    def __init__(
        self,
        directory: str | Path | None = None,
        *,
        model: Any = None,
        tokenizer: Any = None,
        max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
        max_output_reasks: int = DEFAULT_MAX_OUTPUT_REASKS,
        device: str | None = None,
    ) -> None:
        import torch

        if (directory is None) == (model is None or tokenizer is None):
            raise ConfigurationError("pass a trained model directory, or model= and tokenizer=")
        if max_new_tokens < 1 or max_output_reasks < 0:
            raise ConfigurationError("max_new_tokens must be >= 1 and max_output_reasks >= 0")
        super().__init__(max_tokens=max_new_tokens, max_reasks=max_output_reasks)
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        if directory is not None:
            from peft import PeftModel

            trained = TrainedModel.load(directory)
            base, tokenizer = load_base(
                trained.base, dtype=torch.bfloat16 if self.device == "cuda" else torch.float32
            )
            model = PeftModel.from_pretrained(base, str(trained.adapter_dir)).merge_and_unload()
            self.model_id = f"{Path(trained.base).name}+{Path(directory).name}"
        else:
            self.model_id = str(getattr(model.config, "name_or_path", "") or type(model).__name__)
        self.model = model.to(self.device).eval()
        self.tokenizer = tokenizer
        self.max_new_tokens = max_new_tokens
        self._lock = threading.Lock()  # one generation at a time: the model is not re-entrant

    @property
    def backend(self) -> str:
        return f"transformers:{self.model_id}"

    def generate(self, conversation: list[dict[str, str]]) -> ChatReply:
        """The greedy answer to a conversation, with its finish reason and token counts."""
        import torch

        inputs = self.tokenizer.apply_chat_template(
            conversation, add_generation_prompt=True, return_tensors="pt", return_dict=True
        ).to(self.device)
        prompt_tokens = int(inputs["input_ids"].shape[1])
        with self._lock, torch.no_grad():
            output = self.model.generate(
                **inputs,
                max_new_tokens=self.max_new_tokens,
                do_sample=False,
                pad_token_id=self.tokenizer.pad_token_id,
                eos_token_id=self.tokenizer.eos_token_id,
            )
        new = output[0, prompt_tokens:]
        finished = bool(len(new)) and int(new[-1]) == self.tokenizer.eos_token_id
        return ChatReply(
            self.tokenizer.decode(new, skip_special_tokens=True),
            "stop" if finished or len(new) < self.max_new_tokens else "length",
            prompt_tokens,
            len(new),
        )

    async def predict(self, requests: Sequence[ExperienceRequest]) -> list[Transition]:
        """Answer the requests one after another (a worker thread each, in order)."""
        return [await self._predict_one(request) for request in requests]

    async def complete(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        schema: Mapping[str, Any] | None = None,
        deadline: Deadline | None = None,
        context: str = "chat",
    ) -> ChatReply:
        """Greedy and unconstrained (``schema`` is not enforced), in a worker thread."""
        return await asyncio.to_thread(self.generate, [dict(message) for message in messages])

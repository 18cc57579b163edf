"""Training experience models: distillation data from the reference envs or recorded trajectories, SFT with LoRA, serving.

* :mod:`.dataset`: SFT examples, each the exact chat request the backends send for a reference
  transition, with the true answer (``dreamgym experience dataset``).
* :mod:`.recorded`: the same from recorded episodes of any domain, no reference env needed
  (``dreamgym experience dataset --from FILE.jsonl``, ``build --trajectories FILE.jsonl``).
* :mod:`.train`: TRL's ``SFTTrainer`` with a PEFT LoRA adapter, loss on the answer only
  (``dreamgym experience train``).
* :mod:`.export`: the adapter written as a llama.cpp GGUF LoRA adapter, which the local backend
  loads beside its base model (:attr:`~dreamgym_env.experience.local.LocalSettings.lora_adapter`).
* :mod:`.serving`: a ``transformers`` experience model for the trained weights (a GPU, or tests).
* :mod:`.evaluate`: the fidelity report on held-out tasks (``dreamgym experience eval``).

This package is above the envs and agents (it rolls out reference episodes) and needs the
``train`` extra: ``pip install 'dreamgym-env[train]'``.
"""

"""Re-write a distilled model's GGUF from its saved Hugging Face weights (the export fixed after the run started)."""
import sys
from pathlib import Path
from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast
from dreamgym_env.experience.trained import TrainedModel, file_sha256
from dreamgym_env.training.export import write_model_gguf
import dataclasses
d = Path(sys.argv[1])
model = AutoModelForCausalLM.from_pretrained(d / "model")
tok = PreTrainedTokenizerFast.from_pretrained(d / "model")
write_model_gguf(model, tok, d / "model.gguf")
t = TrainedModel.load(d)
dataclasses.replace(t, model_sha256=file_sha256(d / "model.gguf")).save()
print("re-exported", d)

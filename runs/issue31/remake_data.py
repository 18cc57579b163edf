"""Make each trained model's data again from the recipe its manifest records, and compare SHA-256s.

python runs/issue31/remake_data.py   (from the repository root; about 90 s)
"""

import hashlib
import json
import time
from pathlib import Path

from dreamgym_env.training.dataset import build_dataset

MODELS = {  # manifest -> the data recipe its build used (n, test_n, end_share; seed 0)
    "dreamgym_env/envs/webshop/experience_model/distilled": (6000, 300, 0.25),
    "dreamgym_env/envs/alfworld/experience_model/distilled": (8000, 300, None),
    "dreamgym_env/envs/webarena/experience_model/distilled": (6000, 300, 0.25),
    "runs/issue31/withdrawn-adapters/webshop": (600, None, None),
    "runs/issue31/withdrawn-adapters/alfworld": (600, None, None),
}
out = Path("runs/issue31/remade")
out.mkdir(parents=True, exist_ok=True)
for folder, (n, test_n, end_share) in MODELS.items():
    manifest = json.loads((Path(folder) / "dreamgym-experience.json").read_text())
    data = out / (folder.replace("/", "_") + ".jsonl")
    started = time.time()
    build_dataset(manifest["domain"], n, data, test_n=test_n, seed=0, end_share=end_share)
    rows = [json.loads(line) for line in data.open()]
    same = hashlib.sha256(data.read_bytes()).hexdigest() == manifest["data"]["sha256"]
    train_tasks = {row["task_id"] for row in rows if row["split"] == "train"}
    print(
        f"{folder}: {'byte-identical' if same else 'DIFFERENT'}; train tasks {len(train_tasks)} "
        f"(manifest {manifest['data']['train_tasks']}, same ids: {train_tasks == set(manifest['train_task_ids'])}); "
        f"{time.time() - started:.0f} s",
        flush=True,
    )

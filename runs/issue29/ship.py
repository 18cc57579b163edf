"""Install a distilled model into its pack (envs/<domain>/experience_model/distilled/) with its held-out measurements."""
import dataclasses, json, shutil, sys
from pathlib import Path
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.experience.trained import DISTILLED_DIR, TrainedModel, file_sha256
src, speed = Path(sys.argv[1]), json.loads(Path(sys.argv[2]).read_text())
t = TrainedModel.load(src)
pack = get_domain(t.domain)
dest = pack.experience_model_dir / DISTILLED_DIR
dest.mkdir(parents=True, exist_ok=True)
shutil.copyfile(t.model_gguf, dest / "model.gguf")
r = speed["report"]
evaluation = {"model_sha256": t.model_sha256, "n": speed["n"], "seed": speed["seed"], "num_envs": speed["num_envs"],
              "transitions_per_s": speed["transitions_per_s"], "failed_batches": speed["failed_batches"],
              "command": f"python benchmarks/experience_speed.py --domain {t.domain} --model local:distilled --num-envs {speed['num_envs']} --n {speed['n']}",
              **{k: r[k] for k in ("valid", "kind_agreement", "reward_agreement", "done_agreement", "always_zero_reward", "always_zero_done")}}
shipped = dataclasses.replace(t, directory=dest, model_gguf=dest / "model.gguf", evaluation=evaluation)
shipped.save()
assert file_sha256(dest / "model.gguf") == t.model_sha256
s, c = t.stats, t.config
(dest / "report.md").write_text(f"""# The {t.domain} pack's distilled experience model

A {c['parameters']/1e6:.2f}M-parameter Qwen2 ({c['shape']['layers']} layers, hidden {c['shape']['hidden']}), a {c['vocab_size']}-token BPE tokenizer trained on the pack's requests and answers, trained from scratch: {s['steps']} steps of {c['batch_size']} examples ({s['epochs']} epochs of {s['examples']} train examples, expert/noisy/random thirds), {s['seconds']/60:.1f} CPU minutes on 2 cores, final loss {s['final_loss']:.3f}. Served by the embedded runtime without the system prompt (`experience_model="local:distilled"`).

Rebuild: `dreamgym experience dataset --domain {t.domain} --n 6000 --test-n 300 --out runs/issue29/{t.domain}/sft.jsonl`, then `dreamgym experience distill --data runs/issue29/{t.domain}/sft.jsonl --out runs/issue29/{t.domain}/distill-{c['size']} --size {c['size']} --max-steps {c["max_steps"]} --max-minutes {c["max_minutes"]} --end-weight {c["end_weight"]}`.

Held-out ({speed['n']} transitions of test tasks, {speed['num_envs']} at a time; `{evaluation['command']}`): {speed['transitions_per_s']:.2f} transitions/s, valid {r['valid']:.3f}, state kind {r['kind_agreement']}, reward agreement {r['reward_agreement']:.3f} (always-0 {r['always_zero_reward']:.3f}), episode end {r['done_agreement']:.3f} (never-done {r['always_zero_done']:.3f}).
""")
print("shipped", dest)

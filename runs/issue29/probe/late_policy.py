"""What a sim2real run's DreamGym-PPO policy does, greedy, in the synthetic shop and in the reference shop.

python runs/issue29/probe/late_policy.py runs/issue29/sim2real-rubric-30k [episodes]
Prints each episode's actions and rewards in both shops, then a summary (episode lengths, ends, wins).
"""
import json
import sys
from collections import Counter
from pathlib import Path

from sb3_contrib import MaskablePPO

from dreamgym_env.envs.registry import get_domain
from dreamgym_env.replay.embedders import HashedEmbedder
from dreamgym_env.rl.sb3 import wrap_for_sb3
from dreamgym_env.rl.sim2real import PPOSettings, Sim2RealConfig, _reference_env, _synthetic_env, make_experience_model

run = Path(sys.argv[1])
episodes = int(sys.argv[2]) if len(sys.argv) > 2 else 10
saved = json.loads((run / "results.json").read_text())["config"]
ppo = PPOSettings(**saved.pop("ppo"))
saved.pop("error_rates")
config = Sim2RealConfig(**{**saved, "out_dir": run}, ppo=ppo)
domain = get_domain(config.domain)
policy = MaskablePPO.load(run / "models" / f"dreamgym-{config.model}-0.zip")
embedder = HashedEmbedder(ppo.embed_dim)
model = make_experience_model(config.model, config.domain, reward=config.reward or "outcome", seed=0)
shops = {
    "synthetic": wrap_for_sb3(_synthetic_env(config, model), embedder, max_actions=ppo.max_actions),
    "reference": wrap_for_sb3(_reference_env(config, "train"), embedder, max_actions=ppo.max_actions),
}
tasks = domain.tasks("train")[:episodes]
summary = {name: Counter() for name in shops}
for i, task in enumerate(tasks):
    print("=" * 30, task.instruction)
    for name, env in shops.items():
        obs, info = env.reset(seed=i, options={"task": task})
        actions, rewards, done = [], [], False
        while not done:
            a, _ = policy.predict(obs, deterministic=True, action_masks=env.get_wrapper_attr("action_masks")())
            obs, r, term, trunc, info = env.step(int(a))
            actions.append(info.get("action_text", str(int(a))))
            rewards.append(r)
            done = term or trunc
        summary[name]["steps"] += len(actions)
        summary[name]["terminated"] += bool(term)
        summary[name]["won"] += bool(info.get("won", False))
        print(f"  {name}: {len(actions)} steps, reward {sum(rewards):g}, terminated {term}, won {info.get('won')}")
        print("   ", " | ".join(actions[:20]))
print({name: dict(c) for name, c in summary.items()})

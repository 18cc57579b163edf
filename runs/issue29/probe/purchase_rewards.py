"""The model's reward on reference purchases of a policy's test episodes: where it pays what the shop does not."""
import asyncio
import json
import sys
from collections import Counter

from dreamgym_env.agents import make_policy
from dreamgym_env.agents.rollouts import collect_trajectories
from dreamgym_env.bench.fidelity import reference_transitions
from dreamgym_env.envs.models import pack_models
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.experience.selection import model_from_spec

spec, policy_name, episodes = sys.argv[1], sys.argv[2], int(sys.argv[3])
split = "train" if "train" in sys.argv[4:] else "test"
domain = get_domain("webshop")
env = domain.make_reference_env(split=split, max_steps=domain.max_episode_steps)
trajectories = collect_trajectories(env, make_policy(policy_name, domain, seed=7), episodes,
                                    tasks=domain.tasks(split), seed=7, policy_name=policy_name,
                                    progress=False, state_mode="structured")
ends = [t for t in reference_transitions(trajectories, domain) if t.truth.terminated]
model = model_from_spec(spec, models=pack_models(domain), domain="webshop")
answers = asyncio.run(model.predict([t.request for t in ends]))
table = Counter()
rows = []
for t, a in zip(ends, answers):
    true_r, got_r = t.truth.reward, a.reward
    table[(true_r == 1.0, got_r == 1.0)] += 1
    rows.append({"action": t.request.action, "true": true_r, "model": got_r, "done": a.terminated})
print(json.dumps(rows[:40], indent=0))
print("purchases", len(ends), "(true paid, model paid):", dict(table))
print("mean |reward error|", sum(abs(r["true"] - r["model"]) for r in rows) / max(1, len(rows)))
if "show" in sys.argv[4:]:
    from dreamgym_env.experience.prompt import user_prompt
    shown = 0
    for t, a in zip(ends, answers):
        if a.reward == 1.0 and t.truth.reward < 1.0 and shown < 3:
            shown += 1
            print("=" * 80, "\ntrue", t.truth.reward, "model", a.reward, "\n", a.reasoning)
            print(user_prompt(t.request)[-3000:])

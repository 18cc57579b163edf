"""Expert puts on pick-two test tasks, asked of a model: does it end the episode where the reference does? (python runs/issue28/probe/alfworld_pick2_puts.py local:distilled)"""
import asyncio, json, sys
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.envs.models import pack_models
from dreamgym_env.experience.selection import model_from_spec
from dreamgym_env.training.dataset import read_examples
from dreamgym_env.bench.fidelity import reference_transitions
from dreamgym_env.agents import make_policy
from dreamgym_env.agents.rollouts import collect_trajectories
from dreamgym_env.envs.alfworld.goal import Goal
domain = get_domain("alfworld")
tasks = [t for t in domain.tasks("test") if Goal.of_task(t).family == "pick_two_obj_and_place"][:30]
env = domain.make_reference_env(split="test", max_steps=50)
trajs = collect_trajectories(env, make_policy("expert", domain), len(tasks), tasks=tasks, progress=False, state_mode="structured")
puts = [t for t in reference_transitions(trajs, domain) if t.request.action.startswith("put")]
model = model_from_spec(sys.argv[1], models=pack_models(domain), domain="alfworld")
answers = asyncio.run(model.predict([t.request for t in puts]))
ok = 0
for t, a in zip(puts, answers):
    ok += (a.terminated == t.truth.terminated)
    if a.terminated != t.truth.terminated:
        print("truth done", t.truth.terminated, "| model:", a.reasoning)
print("puts", len(puts), "done agreed", ok)

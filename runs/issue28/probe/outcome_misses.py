"""Rollouts whose outcome differs between the synthetic and the reference env, step by step (any domain).

python runs/issue28/probe/outcome_misses.py DOMAIN local:distilled [policy ...]
Plays the build's rollouts (50 episodes a policy, test tasks, seeds as rollout_consistency) and
prints, for each episode whose outcome differs, every step's action, both rewards and whether
the pages agree, and the world line the request showed (a purchase, a stop).
"""
import sys

from dreamgym_env.agents import make_policy
from dreamgym_env.bench.fidelity import normalize_state
from dreamgym_env.envs.models import pack_models
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.errors import ModelOutputError
from dreamgym_env.experience.selection import model_from_spec

domain_name, spec = sys.argv[1], sys.argv[2]
policies = sys.argv[3:] or ["expert", "noisy"]
domain = get_domain(domain_name)
model = model_from_spec(spec, models=pack_models(domain), domain=domain_name)
tasks = domain.tasks("test")
synthetic = DreamEnv(domain, model, split="test", max_steps=domain.max_episode_steps, state_mode="structured")
reference = domain.make_reference_env(split="test", max_steps=domain.max_episode_steps)
for index, name in enumerate(["expert", "noisy"]):
    if name not in policies:
        continue
    policy = make_policy(name, domain, seed=index)
    for episode in range(50):
        task = tasks[episode % len(tasks)]
        getattr(policy, "reset", lambda: None)()
        obs, info = synthetic.reset(seed=episode, options={"task": task})
        ref_obs, _ = reference.reset(seed=episode, options={"task": task})
        steps, done, ref_done = [], False, False
        while not done:
            action = policy(obs, info)
            line = domain.world_lines(task, synthetic.state, action)
            try:
                obs, r, term, trunc, info = synthetic.step(action)
            except ModelOutputError:  # as rollout_consistency: the episode stops, not won
                steps.append((action, 0.0, None, False, ("the model's answer was unusable",)))
                break
            done = term or trunc
            rr = None
            if not ref_done:
                ref_obs, rr, rt, rtr, _ = reference.step(action)
                ref_done = rt or rtr
            steps.append((action, r, rr, normalize_state(obs) == normalize_state(ref_obs), line))
        syn_won = steps[-1][1] >= 1.0
        ref_won = any(s[2] == 1.0 for s in steps)
        if syn_won != ref_won:
            print(f"== {name} episode {episode} task {task.id}: synthetic won {syn_won}, reference won {ref_won}")
            print("   ", task.instruction)
            for action, r, rr, same, line in steps:
                print(f"    {action!r:45} r={r} ref={rr} same_page={same} {line[0] if line else ''}")

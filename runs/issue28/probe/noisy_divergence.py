"""Where do a pack's rollouts diverge? play_and_replay's loop, logging each episode's first divergence."""
import json
import sys

from dreamgym_env.agents import make_policy
from dreamgym_env.bench.fidelity import normalize_state
from dreamgym_env.envs.models import pack_models
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.experience.selection import model_from_spec

name, spec, policy_name, episodes = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
domain = get_domain(name)
model = model_from_spec(spec, models=pack_models(domain), domain=name)
tasks = domain.tasks("test")
synthetic = DreamEnv(domain, model, split="test", max_steps=domain.max_episode_steps, history_len=4, state_mode="structured")
reference = domain.make_reference_env(split="test", max_steps=domain.max_episode_steps)
policy = make_policy(policy_name, domain, seed=1 if policy_name == "noisy" else 0)
for episode in range(episodes):
    task = tasks[episode % len(tasks)]
    policy.reset() if hasattr(policy, "reset") else None
    obs, info = synthetic.reset(seed=episode, options={"task": task})
    robs, _ = reference.reset(seed=episode, options={"task": task})
    first, done, rdone, log = None, False, False, []
    s_won = r_won = False
    step = 0
    while not done:
        action = policy(obs, info)
        obs, rew, term, trunc, info = synthetic.step(action)
        done = term or trunc
        step += 1
        s_won = bool(info.get("won", term and rew >= 1))
        if not rdone:
            robs, rrew, rterm, rtrunc, rinfo = reference.step(action)
            rdone = rterm or rtrunc
            r_won = bool(rinfo.get("won", rterm and rrew >= 1))
            if first is None and (normalize_state(obs) != normalize_state(robs) or rew != rrew or term != rterm):
                what = "reward" if normalize_state(obs) == normalize_state(robs) and rew != rrew else (
                    "done" if normalize_state(obs) == normalize_state(robs) else "state")
                first = {"step": step, "action": action, "what": what, "reward": [rew, rrew], "term": [term, rterm],
                         "synthetic": obs[:300], "reference": robs[:300], "score": rinfo.get("score")}
    print(json.dumps({"episode": episode, "task": task.id, "synthetic_won": s_won, "reference_won": r_won, "first": first}))

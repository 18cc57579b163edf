"""Resident memory of one synthetic WebShop env with the distilled model, a noisy policy (python runs/issue29/probe/memory.py)."""
import resource, os, time
import numpy as np
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.rl.sim2real import Sim2RealConfig, _synthetic_env, _reference_env, make_experience_model
from dreamgym_env.agents import make_policy
def rss(): return int(open(f"/proc/{os.getpid()}/statm").read().split()[1])*4096/1e9
config = Sim2RealConfig("webshop", model="local:distilled", synthetic_reward="rubric")
model = make_experience_model(config.model, config.domain, reward="score", seed=0)
env = _synthetic_env(config, model)
print("start", round(rss(),2))
pol = make_policy("noisy", get_domain("webshop"), seed=0, epsilon=0.5)
steps=0; t=time.time()
obs, info = env.reset(seed=0)
while steps < 800:
    acts = info.get("admissible_actions") or ["search[shoes]"]
    a = pol(obs, info) if info.get("admissible_actions") else acts[0]
    obs, r, term, trunc, info = env.step(a); steps += 1
    if term or trunc: obs, info = env.reset()
    if steps % 400 == 0: print(steps, round(rss(),2), round(time.time()-t))

"""Draw a sim2real run's learning_curves.png again from its results.json (python runs/issue29/probe/replot.py RUN_DIR)."""
import json
import sys
from pathlib import Path

from dreamgym_env.rl.sim2real import PPOSettings, RunResult, Sim2RealConfig, Sim2RealReport, plot

run = Path(sys.argv[1])
saved = json.loads((run / "results.json").read_text())
config = dict(saved["config"])
ppo = PPOSettings(**config.pop("ppo"))
config["error_rates"] = tuple(config["error_rates"])
report = Sim2RealReport(Sim2RealConfig(**{**config, "out_dir": run}, ppo=ppo), [RunResult(**r) for r in saved["runs"]], saved["seconds"])
print(plot(report, run / "learning_curves.png"))

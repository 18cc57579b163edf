"""The ALFWorld parts of the experience model's system prompt (sent with every model call)."""

from __future__ import annotations

from dreamgym_env.envs.domain import DomainPrompt

PROMPT = DomainPrompt(
    rules="""ALFWorld: a household text world. One room with numbered receptacles (cabinet 1, \
countertop 1, fridge 1 ...) and numbered objects (apple 1, mug 2 ...). The agent carries at most \
one object. Commands:
- go to {recep}: move there and see it.
- open {recep} / close {recep}: at it; cabinet, drawer, fridge, microwave and safe start closed \
and hide their contents.
- take {obj} from {recep}: at it, visible there, hands empty. Lamps cannot be taken.
- put {obj} in/on {recep}: holding it, at the receptacle, open if it opens.
- clean {obj} with sinkbasin, heat {obj} with microwave, cool {obj} with fridge: holding it, \
at that receptacle (closed is fine); makes it clean, hot or cool (heat removes cool and cool \
removes hot). Only foods, dishes, cookware, cloth and soap can be cleaned; only foods and \
dishes heated or cooled.
- use {lamp}: a desklamp or floorlamp at the location; switches it on or off.
- examine {obj|recep}, inventory, look: change nothing.
Anything else, or a command whose conditions fail, changes nothing.""",
    state_format="""The next state is one observation in exactly these forms:
- Start: "You are in the middle of a room. Looking quickly around you, you see a cabinet 1, \
..., and a toaster 1." then a blank line and "Your task is to: <goal>".
- go to: "You arrive at <recep>. " + its view. View: "On the <recep>, you see <list>." \
(cannot open), "The <recep> is closed.", or "The <recep> is open. In it, you see <list>."
- open: "You open the <recep>. The <recep> is open. In it, you see <list>."; close: "You \
close the <recep>."; examine <recep>: its view.
- "You pick up the <obj> from the <recep>.", "You put the <obj> in/on the <recep>.", "You \
clean|heat|cool the <obj> using the <recep>.", "You turn on|off the <lamp>."
- examine <obj>: "There's nothing special about <obj>.", "This is a clean and hot <obj>.", \
or for a lamp "The <lamp> is turned on|off."
- inventory: "You are carrying: a <obj>." or "You are not carrying anything."
- look: "You are facing the <recep>. Next to it, you see nothing." (or the start's room \
sentence when at no receptacle).
- invalid: "Nothing happens."
<list>: "nothing", "a X", "a X, and a Y", "a X, a Y, and a Z" (always "a"). The same room \
always holds the same objects: keep what earlier observations showed.""",
    reward_rubric="""Reward 1 only at the step that satisfies the goal, else 0. "put a/some X \
in/on Y": an X in a receptacle of type Y. "put a clean/hot/cool X in Y" ("clean/heat/cool \
some X and put it in Y"): an X with that state in a Y. "put two X in Y" ("find two X and put \
them in Y"): two X in the same Y. "look at X under the L" ("examine the X with the L"): \
holding an X while a lamp of type L at the agent's location is on. The episode ends there.""",
)

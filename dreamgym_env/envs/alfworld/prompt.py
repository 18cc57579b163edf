"""The ALFWorld parts of the experience model's system prompt (sent with every model call)."""

from __future__ import annotations

from dreamgym_env.domain import DomainPrompt

PROMPT = DomainPrompt(
    rules="""ALFWorld 0.3: a household text world. One room with numbered receptacles (cabinet 1, \
fridge 1 ...) and objects (apple 1, mug 2 ...). The agent carries at most one object. Commands:
- go to {recep}: move there (also if there).
- open/close {recep}: at it; cabinet, drawer, fridge, microwave and safe start closed, hiding \
their contents.
- take {obj} from {recep}: at it, visible, hands empty. Lamps cannot be taken.
- put {obj} in/on {recep}: holding it, at it, open if it opens, and only where ALFRED lets the \
type go (no apple in a cabinet, no candle in a garbagecan).
- clean {obj} with sinkbasin, heat {obj} with microwave, cool {obj} with fridge: holding it, at \
that receptacle (closed is fine), for types that take the state; heat undoes cool, cool hot.
- slice {obj} with {knife}: holding a knife, an apple, bread, egg, lettuce, potato or tomato here.
- use {lamp}: a lamp here; turns it on for good.
- examine {obj|recep}, inventory, look.
Anything else changes nothing. Receptacles start as "The world" lists.""",
    state_format="""The next state is one observation in exactly these forms:
- Start: "-= Welcome to TextWorld, ALFRED! =-\\n\\nYou are in the middle of a room. Looking \
quickly around you, you see <list of receptacles>.\\n\\nYour task is to: <goal>".
- go to: "You arrive at loc <N>. " + view: "On the <recep>, you see \
<list>.", "The <recep> is closed.", or "The <recep> is open. In it, you see <list>."
- open: "You open the <recep>. " + view; close: "You close the <recep>."; examine <recep>: view.
- "You pick up the <obj> from the <recep>.", "You put the <obj> in/on the <recep>.", "You \
clean|heat|cool the <obj> using the <recep>.", "You sliced the <obj> with the <knife>.", "You \
turn on the <lamp>."
- examine <obj>: "This is a normal <obj>. In it, you see nothing." (bowl, box, cup, mug, pan, \
plate, pot), "This is a hot and clean <obj>.", "This is a cold <obj>." ..., "This <lamp> is on." \
once used, else "There's nothing special about <obj>."
- inventory: "You are carrying: a <obj>." or "You are not carrying anything."
- look: "You are facing the <recep>. Next to it, you see nothing." (at no receptacle: "You are \
in the middle of a room. Looking quickly around you, you see nothing.")
- invalid: "Nothing happens."
<list>: "nothing", "a X", "a X, and a Y", "a X, a Y, and a Z", by type, numbers descending. \
Keep what earlier observations showed.""",
    reward_rubric="""Reward 1 only at the step that satisfies the goal, else 0; the episode ends \
there. "put a/some X in/on Y" (also "put a clean/hot/cool X in Y", "clean/heat/cool some X and \
put it in Y", "put two X in Y", "find two X and put them in Y"): one (two) X, with that state, in \
one receptacle of type Y. "look at X under the L" ("examine the X with the L"): holding an X \
where a lamp of type L is on.""",
)

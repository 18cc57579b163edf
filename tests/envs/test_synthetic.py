from __future__ import annotations

import contextlib

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dreamgym_env  # noqa: F401
from dreamgym_env import ConfigurationError, ExperienceModelError
from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.errors import ModelOutputError, ModelTimeoutError, UnknownNameError
from dreamgym_env.testing import ScriptedExperienceModel
from dreamgym_env.types import Demonstration, ExperienceRequest, Transition


def test_reset_gives_task_initial_state(scripted_model, webshop_task):
    env = DreamEnv("webshop", scripted_model)
    obs, info = env.reset(seed=1, options={"task": webshop_task})
    assert env.state == info["state"] == webshop_task.initial_state  # what the model reads
    assert obs == env.observation == env.domain.render_observation(webshop_task.initial_state)
    assert info["task"] == webshop_task and info["task_id"] == webshop_task.id
    assert info["source"] == "synthetic"
    assert info["admissible_actions"][0] == "search[<query>]"


def test_reset_is_seeded(scripted_model):
    env = DreamEnv("webshop", scripted_model)
    drawn = [env.reset(seed=s)[1]["task_id"] for s in (3, 4, 3)]
    assert drawn[0] == drawn[2] and drawn[0] != drawn[1]
    assert len({env.reset(seed=s)[1]["task_id"] for s in range(10)}) > 5


def test_reset_by_id_and_instruction(scripted_model, webshop_task):
    env = DreamEnv("webshop", scripted_model)
    assert env.reset(options={"task": webshop_task.id})[1]["task"] == webshop_task
    obs, info = env.reset(options={"task": "i want red running shoes under 50 dollars"})
    assert "i want red running shoes" in obs and info["task"].instruction.startswith("i want red")
    with pytest.raises(UnknownNameError, match="Did you mean"):
        env.reset(options={"task": webshop_task.id + "x"})


def test_valid_action_calls_model_with_request(scripted_model, webshop_task):
    env = DreamEnv("webshop", scripted_model)
    env.reset(options={"task": webshop_task})
    obs, reward, terminated, truncated, info = env.step("search[ navy  shirt ]")
    request = scripted_model.requests[-1]
    assert request.action == "search[ navy  shirt ]"  # WebShop's grammar keeps the argument
    assert request.state == webshop_task.initial_state and request.history == []
    assert obs.startswith("WebShop | item") and reward == 0.0 and not terminated and not truncated
    assert info["action_valid"] and info["reasoning"] == "after search[ navy  shirt ]"
    assert info["admissible_actions"] == ["click[Back to Search]", "click[< Prev]", "click[Buy Now]"]


def test_a_request_carries_what_its_domain_looks_up(scripted_model, webshop_task):
    """A WebShop search: the engine's results as lines in text mode, as given fields in structured mode."""
    text = DreamEnv("webshop", scripted_model, state_mode="text")
    text.reset(options={"task": webshop_task})
    text.step("search[shirt]")
    request = scripted_model.requests[-1]
    assert request.world == text.domain.answer_fields(request.state, "search[shirt]", webshop_task)["world"]
    assert [line.split(": ", 1)[0] for line in request.world] == ['"query"', '"page"', '"total"', '"results"']
    assert request.given_fields == {}
    structured = DreamEnv("webshop", scripted_model, state_mode="structured")
    structured.reset(options={"task": webshop_task})
    with contextlib.suppress(ModelOutputError):  # the scripted pages are text: structured mode refuses them
        structured.step("search[shirt]")
    request = scripted_model.requests[-1]
    assert request.world == [] and list(request.given_fields) == ["query", "page", "total", "results"]


def test_invalid_action_gives_feedback_without_model_call(scripted_model, webshop_task):
    env = DreamEnv("webshop", scripted_model)
    env.reset(options={"task": webshop_task})
    for action in ("buy it now", "click[Buy Now]", "search[]"):
        obs, reward, terminated, truncated, info = env.step(action)
        assert env.state == webshop_task.initial_state  # WebShop leaves the page unchanged
        assert obs == env.domain.render_observation(webshop_task.initial_state)
        assert reward == 0.0 and not terminated and not info["action_valid"] and info["error"]
    assert scripted_model.calls == 0
    # The page did not change: a valid action is still judged against the search page.
    env.step("search[shirt]")
    assert scripted_model.requests[-1].state == webshop_task.initial_state


@pytest.mark.parametrize("state_mode", ["text", "structured"])
def test_the_listed_search_template_is_an_invalid_action(scripted_model, webshop_task, state_mode):
    """Issue 30, item 6: ``search[<query>]`` from ``admissible_actions`` is refused, not sent to the model."""
    env = DreamEnv("webshop", scripted_model, state_mode=state_mode)
    _, info = env.reset(options={"task": webshop_task})
    assert "search[<query>]" in info["admissible_actions"]
    state = env.state
    _, reward, terminated, _, info = env.step("search[<query>]")
    assert (reward, terminated, info["action_valid"]) == (0.0, False, False)
    assert (
        info["error"]
        == "search[<query>] is a template from admissible_actions: replace <query> with your own text"
    )
    assert env.state == state and scripted_model.calls == 0 and len(env.steps) == 1
    if state_mode == "text":  # a query that merely holds angle brackets is a query
        assert env.step("search[<query> shoes]")[4]["action_valid"] and scripted_model.calls == 1


def test_usage_is_a_dict_on_invalid_actions_too(scripted_model, webshop_task):
    """Issue 30, item 6: as documented, ``info["usage"]`` is a dict; no model call made, no tokens."""
    env = DreamEnv("webshop", scripted_model)
    env.reset(options={"task": webshop_task})
    invalid = env.step("buy it now")[4]["usage"]
    valid = env.step("search[shirt]")[4]["usage"]
    assert isinstance(invalid, dict) and invalid.keys() == valid.keys()
    assert (invalid["prompt_tokens"], invalid["completion_tokens"], invalid["attempts"]) == (0, 0, 0)
    assert valid["model"] == "scripted" and valid["attempts"] == 1


def test_buy_now_ends_episode_with_outcome_reward(scripted_model, webshop_task):
    env = DreamEnv("webshop", scripted_model)
    env.reset(options={"task": webshop_task})
    env.step("search[shirt]")
    _, reward, terminated, _, info = env.step("click[Buy Now]")
    assert reward == 1.0 and terminated and info["won"]
    with pytest.raises(ConfigurationError, match="reset"):
        env.step("click[Buy Now]")


def test_reward_counts_only_at_episode_end_and_is_clipped(webshop_task):
    def respond(request: ExperienceRequest) -> Transition:
        ends = request.action == "click[Buy Now]"
        return Transition(next_state="[Buy Now]", reward=7.0 if ends else 1.0, terminated=ends)

    env = DreamEnv("webshop", ScriptedExperienceModel(respond))
    env.reset(options={"task": webshop_task})
    assert env.step("search[x]")[1] == 0.0  # a reward without an episode end does not count
    assert env.step("click[Buy Now]")[1] == 1.0


def test_history_is_bounded(scripted_model, webshop_task):
    env = DreamEnv("webshop", scripted_model, history_len=2)
    env.reset(options={"task": webshop_task})
    env.step("search[a]")
    for _ in range(3):
        env.step("click[< Prev]")
    assert len(scripted_model.requests[-1].history) == 2


def test_max_steps_truncates(scripted_model, webshop_task):
    env = DreamEnv("webshop", scripted_model, max_steps=2)
    env.reset(options={"task": webshop_task})
    assert not env.step("nonsense")[3]
    assert env.step("nonsense")[3]


def test_context_provider_and_step_listener(scripted_model, webshop_task):
    env = DreamEnv("webshop", scripted_model)
    demo = Demonstration(state="s", action="click[x]", next_state="t")
    env.add_context_provider(lambda request: [demo])
    seen = []
    env.add_step_listener(lambda task, step, index: seen.append((task.id, step.action, step.action_valid)))
    env.reset(options={"task": webshop_task})
    env.step("search[shirt]")
    env.step("bad")
    assert scripted_model.requests[-1].demonstrations == [demo]
    assert seen == [(webshop_task.id, "search[shirt]", True), (webshop_task.id, "bad", False)]


def test_model_failure_raises_typed_error_and_keeps_state(webshop_task):
    def fail(request: ExperienceRequest) -> Transition:
        raise ModelTimeoutError("timed out", backend="scripted", attempts=3)

    env = DreamEnv("webshop", ScriptedExperienceModel(fail), on_model_error="raise")
    env.reset(options={"task": webshop_task})
    with pytest.raises(ExperienceModelError):
        env.step("search[shirt]")
    assert env.state == webshop_task.initial_state and env.steps == []


def test_a_step_the_model_cannot_answer_ends_the_episode_truncated(webshop_task, caplog):
    def fail_on_shirt(request: ExperienceRequest) -> Transition:
        if "shirt" in request.action:
            raise ModelOutputError(f"task {request.task.id!r}: kept answering 'reward': 3", attempts=3)
        return Transition(reasoning="ok", next_state=f"WebShop | results\n[Back to Search]\n{request.action}")

    env = DreamEnv("webshop", ScriptedExperienceModel(fail_on_shirt))
    env.reset(options={"task": webshop_task})
    before, _, _, _, _ = env.step("search[socks]")
    observation, reward, terminated, truncated, info = env.step("search[shirt]")
    assert (observation, reward, terminated, truncated) == (before, 0.0, False, True)
    assert info["error"].startswith("ModelOutputError: task") and "'reward': 3" in info["error"]
    assert info["action_valid"] and not info["won"] and info["usage"]["attempts"] == 3
    assert [step.action for step in env.steps] == ["search[socks]"]  # the failed step is not recorded
    assert env.model_failures == 1
    assert "the episode ends truncated: ModelOutputError" in caplog.text
    with pytest.raises(ConfigurationError, match="reset"):
        env.step("search[more]")
    env.reset(options={"task": webshop_task})  # a new episode, as after a time limit
    assert env.step("search[socks]")[3] is False


def test_on_model_error_is_checked(scripted_model):
    with pytest.raises(ConfigurationError, match="on_model_error must be 'truncate' or 'raise'"):
        DreamEnv("webshop", scripted_model, on_model_error="ignore")  # type: ignore[arg-type]


def test_a_dead_end_the_model_writes_is_a_model_failure(webshop_task):
    def done_after_search(request: ExperienceRequest) -> Transition:
        return Transition(reasoning="?", next_state="WebShop | done\nPurchased nothing.")

    env = DreamEnv("webshop", ScriptedExperienceModel(done_after_search))
    env.reset(options={"task": webshop_task})
    _, _, terminated, truncated, info = env.step("search[shirt]")
    assert (terminated, truncated) == (False, True)
    assert "offers no action, but the episode goes on" in info["error"]


def test_a_rejected_action_is_kept_in_the_history_cut_to_the_grammars_length(webshop_task):
    model = ScriptedExperienceModel(
        lambda request: Transition(reasoning="ok", next_state="WebShop | results\n[Back to Search]")
    )
    env = DreamEnv("webshop", model)
    env.reset(options={"task": webshop_task})
    junk = "search[" + "x" * 100_000 + "]"
    _, _, _, _, info = env.step(junk)
    assert not info["action_valid"]
    assert len(env.steps[-1].action) == env.domain.max_action_chars
    env.step("search[shirt]")
    (sent,) = model.requests
    assert sent.history[-1].action == env.steps[0].action


def test_an_unknown_reset_option_names_the_known_ones(scripted_model):
    env = DreamEnv("webshop", scripted_model)
    with pytest.raises(
        ConfigurationError, match=r"unknown reset option\(s\) \['tsk'\]: DreamEnv takes \['task'\]"
    ):
        env.reset(options={"tsk": 1})


def test_no_model_configured_is_a_clear_error(monkeypatch):
    for name in ("DREAMGYM_BASE_URL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "DREAMGYM_LOCAL_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(
        "dreamgym_env.experience.selection.local_backend_available", lambda: False, raising=False
    )
    with pytest.raises(ConfigurationError, match="DREAMGYM_BASE_URL"):
        gym.make("DreamGym/WebShop-v0")


_ANY_TEXT = st.one_of(
    st.text(max_size=200),
    st.from_regex(r"(search|click)\[[^\]]{0,40}\]", fullmatch=True),
    st.sampled_from(["click[Buy Now]", "click[]", "search[ ]", "click[[x]]", "\x00", "click[< Prev]"]),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(actions=st.lists(_ANY_TEXT, min_size=1, max_size=6))
def test_any_string_never_raises(actions, webshop_task, page_after):
    env = DreamEnv("webshop", ScriptedExperienceModel(page_after), max_steps=5)
    obs, _ = env.reset(options={"task": webshop_task})
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(action)
        assert isinstance(obs, str) and reward in (0.0, 1.0) and isinstance(info["action_valid"], bool)
        if terminated or truncated:
            obs, _ = env.reset(options={"task": webshop_task})


def test_webshop_episode_ends_only_at_buy_now(webshop_task):
    def always_done(request: ExperienceRequest) -> Transition:
        return Transition(next_state="[Buy Now] [< Prev]", reward=1.0, terminated=True)

    env = DreamEnv("webshop", ScriptedExperienceModel(always_done))
    env.reset(options={"task": webshop_task})
    _, reward, terminated, _, info = env.step("search[x]")
    assert not terminated and reward == 0.0 and not info["won"]
    _, reward, terminated, _, info = env.step("click[Buy Now]")
    assert terminated and reward == 1.0 and info["won"]


def test_env_closes_only_the_model_it_chose(monkeypatch, scripted_model):
    closed = []
    monkeypatch.setattr(type(scripted_model), "close", lambda self: closed.append(self))
    DreamEnv("webshop", scripted_model).close()
    assert closed == []  # a passed model may be shared
    monkeypatch.setattr(
        "dreamgym_env.experience.selection.default_experience_model", lambda **_: scripted_model
    )
    DreamEnv("webshop").close()
    assert closed == [scripted_model]


def test_gym_make_passes_model_settings_to_the_model_it_builds(monkeypatch):
    monkeypatch.setenv("DREAMGYM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("DREAMGYM_MODEL", "m")  # else the absent endpoint is asked for its model
    env = gym.make("DreamGym/WebShop-v0", timeout_s=5, deadline_s=7)
    try:
        config = env.unwrapped.experience_model.config
        assert (config.timeout_s, config.deadline_s) == (5, 7)
    finally:
        env.close()
    envs = gym.make_vec("DreamGym/WebShop-v0", num_envs=2, timeout_s=3)
    try:
        assert envs.unwrapped.experience_model.config.timeout_s == 3
    finally:
        envs.close()


def test_an_unknown_keyword_names_itself_and_the_accepted_ones():
    """Issue 30, item 6: refused before any model is chosen, not blamed on the local backend."""
    with pytest.raises(ConfigurationError) as caught:
        gym.make("DreamGym/WebShop-v0", bogus_kw=1)
    message = str(caught.value)
    assert message.startswith("DreamEnv (WebShop) got unknown keyword argument 'bogus_kw'.")
    assert "local model setting" not in message
    for accepted in (
        "max_steps",
        "state_mode",
        "reward_mode",
        "timeout_s",
        "base_url",
        "model",
        "model_path",
    ):
        assert f"{accepted}," in message or f"{accepted})" in message
    with pytest.raises(ConfigurationError, match="Did you mean 'max_steps'"):
        gym.make("DreamGym/WebShop-v0", max_step=3)
    with pytest.raises(
        ConfigurationError, match=r"DreamVectorEnv \(WebShop\) got unknown keyword argument 'bogus_kw'"
    ):
        gym.make_vec("DreamGym/WebShop-v0", num_envs=2, bogus_kw=1)


def test_model_settings_with_a_passed_model_are_refused(scripted_model):
    with pytest.raises(ConfigurationError, match="configure the model an env builds itself"):
        DreamEnv("webshop", scripted_model, timeout_s=5)

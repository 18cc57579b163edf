"""An experience model running a GGUF model in-process (xllamacpp): offline, no key, no GPU.

The model answers with the same prompts, parsing, re-asks, usage accounting and typed errors as
the OpenAI-compatible backend (:mod:`dreamgym_env.experience.openai_backend`); its output is
constrained to the transition JSON schema (string lengths capped, so it cannot run away).

llama.cpp's server engine runs ``n_parallel`` slots (default 4), each with its own context of
``n_ctx`` tokens: the requests of one :meth:`~LocalExperienceModel.predict` call (a vector env's
step) run concurrently, one worker thread each, and llama.cpp decodes them in one batch, so a
batch of 4 costs much less than 4 single calls. Each slot keeps its last prompt's KV cache, and a
request goes to the slot sharing the longest prefix with it: the static system prompt (and the
task and demonstrations an episode repeats) are evaluated once, not per call.
``Usage.cached_prompt_tokens`` counts the prompt tokens so reused. A cancelled or timed-out call
stops generating at the next token.

Example::

    model = LocalExperienceModel()                      # the default preset, assembled once
    model = LocalExperienceModel(preset="qwen-1.5b")    # the larger one, where installed
    model = LocalExperienceModel(model_path="my.gguf")  # any chat GGUF
    transition = model.predict_one(request)
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib.util
import logging
import os
import secrets
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol

from dreamgym_env.errors import (
    ConfigurationError,
    DataError,
    ExperienceModelError,
    ModelRequestError,
    ModelServerError,
    ModelTimeoutError,
    ModelTransportError,
    excerpt,
)
from dreamgym_env.experience.answers import ChatReply
from dreamgym_env.experience.backend import ChatExperienceModel, Deadline
from dreamgym_env.experience.base import wait_interruptibly
from dreamgym_env.experience.config import DEFAULT_MAX_OUTPUT_REASKS, DEFAULT_MAX_TOKENS, DEFAULT_TEMPERATURE
from dreamgym_env.experience.prompt import system_prompt
from dreamgym_env.experience.provision import PartsLocator, check_gguf, installed_parts, model_file
from dreamgym_env.experience.trained import TrainedModel, file_sha256
from dreamgym_env.types import DomainPrompt

logger = logging.getLogger(__name__)

DEFAULT_N_CTX: Final = 8192
"""Context window of one slot: the longest prompt of the built-in domains, with history and demonstrations, plus the answer."""
DEFAULT_N_PARALLEL: Final = 4
"""Slots: requests decoded together (a vector env's step); each has its own ``n_ctx`` and KV cache."""
DEFAULT_CACHE_RAM_MIB: Final = 256
"""The host-side prompt cache's bound (llama.cpp's default is 8,192 MiB)."""
DEFAULT_POLL: Final = 0
"""llama.cpp's polling level while its threads wait for work (0: sleep; its own default, 50, spins)."""
DEFAULT_SEED: Final = 0
LOCAL_EXTRA_HINT: Final = "pip install 'dreamgym-env[local]'"

ChatResult = dict[str, Any]
"""A chat completion as the runtime returns it: OpenAI's shape, or ``{"error": {...}}``."""


def available_cores() -> int:
    """The number of CPU cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class LocalSettings:
    """How the embedded model is run and sampled.

    ``timeout_s`` bounds one generation (``None``: no bound); ``n_threads`` defaults to the
    available cores. ``n_parallel`` requests run at once, each in a slot of ``n_ctx`` tokens
    (the runtime allocates ``n_ctx * n_parallel``: about 12 KB a token for the 0.5B preset);
    further requests of a batch wait for a free slot. ``lora_adapter``: a llama.cpp LoRA adapter
    (GGUF, e.g. written by ``dreamgym experience train``) applied to the model at full scale.
    ``cache_ram_mib``: the most memory llama.cpp's host-side prompt cache may hold (``0``: none).
    Its own default, 8,192 MiB, grew a process by about 0.8 MB a request until it held 8 GiB
    (a 30,000-step sim-to-real run's worker reached 9.3 GB); each slot's own prefix reuse
    (``cache_prompt``) does not need it. ``poll``: how hard llama.cpp's threads spin while they
    wait for work, 0 to 100; its own default, 50, lets two processes on the same cores spin
    against each other (docs/benchmarks.md, shared cores), so the default is 0 (they sleep).
    """

    n_ctx: int = DEFAULT_N_CTX
    n_parallel: int = DEFAULT_N_PARALLEL
    n_threads: int = field(default_factory=available_cores)
    temperature: float = DEFAULT_TEMPERATURE
    max_tokens: int = DEFAULT_MAX_TOKENS
    seed: int = DEFAULT_SEED
    max_output_reasks: int = DEFAULT_MAX_OUTPUT_REASKS
    timeout_s: float | None = None
    lora_adapter: str | None = None
    system_prompt: bool = True
    cache_ram_mib: int = DEFAULT_CACHE_RAM_MIB
    poll: int = DEFAULT_POLL

    def __post_init__(self) -> None:
        if self.cache_ram_mib < 0:
            raise ConfigurationError(f"cache_ram_mib must be >= 0, got {self.cache_ram_mib}")
        if not 0 <= self.poll <= 100:
            raise ConfigurationError(f"poll must be from 0 to 100, got {self.poll}")
        for name in ("n_ctx", "n_parallel", "n_threads", "max_tokens"):
            if getattr(self, name) < 1:
                raise ConfigurationError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.temperature < 0:
            raise ConfigurationError(f"temperature must be >= 0, got {self.temperature}")
        if self.max_output_reasks < 0:
            raise ConfigurationError(f"max_output_reasks must be >= 0, got {self.max_output_reasks}")
        if self.timeout_s is not None and self.timeout_s <= 0:
            raise ConfigurationError(f"timeout_s must be > 0 or None, got {self.timeout_s}")


class ChatRuntime(Protocol):
    """An in-process chat model: blocking calls, up to ``settings.n_parallel`` at once from different threads."""

    def chat(self, body: dict[str, Any], should_stop: Callable[[], bool]) -> ChatResult:
        """Answer an OpenAI-style chat request; stop early once ``should_stop()`` is true.

        The usage may say how many prompt tokens came from the KV cache
        (``usage.prompt_tokens_details.cached_tokens``, or llama.cpp's ``timings.cache_n``).
        """
        ...

    def close(self) -> None:
        """Free the model's memory."""
        ...


RuntimeFactory = Callable[[Path, LocalSettings], ChatRuntime]
"""Loads a GGUF file into a runtime; raises :class:`DataError` when the file cannot be loaded."""


def xllamacpp_installed() -> bool:
    """Whether the default runtime (the ``local`` extra's xllamacpp) is installed."""
    return importlib.util.find_spec("xllamacpp") is not None


class XllamacppRuntime:
    """The default runtime: llama.cpp's server engine in-process, through xllamacpp.

    llama.cpp's embedded server also listens on a loopback port; it is given a random API key
    that nothing else knows, so only this process can use it.
    """

    def __init__(self, path: Path, settings: LocalSettings) -> None:
        try:
            import xllamacpp
        except ImportError as exc:
            raise ConfigurationError(f"the local model needs xllamacpp: {LOCAL_EXTRA_HINT}") from exc
        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.n_ctx = settings.n_ctx * settings.n_parallel  # llama.cpp divides it among the slots
        params.n_parallel = settings.n_parallel
        params.kv_unified = False  # each slot its own n_ctx cells, so a long prompt never starves another
        params.cache_prompt = True  # reuse the longest common prefix of a slot's last prompt
        params.cache_ram_mib = settings.cache_ram_mib
        for cpu in (params.cpuparams, params.cpuparams_batch):
            cpu.n_threads, cpu.poll = settings.n_threads, settings.poll
        params.sampling.seed = settings.seed
        params.warmup = False
        params.verbosity = -1
        params.api_keys = [secrets.token_hex(16)]
        params.endpoint_metrics = True  # the round trip below
        if settings.lora_adapter is not None:
            adapter = xllamacpp.CommonAdapterLoraInfo()
            adapter.path, adapter.scale = str(check_gguf(Path(settings.lora_adapter))), 1.0
            params.lora_adapters = [adapter]
        try:
            self._server: Any = xllamacpp.Server(params)
        except Exception as exc:  # llama.cpp reports a bad file as a generic error
            raise DataError(
                f"could not load the model {path}"
                + (f" with the LoRA adapter {settings.lora_adapter}" if settings.lora_adapter else "")
                + f": {str(exc).rstrip('.')}. If it is a preset, delete the "
                "file to have it assembled again; otherwise check that it is a chat model in GGUF format"
            ) from exc
        # A round trip through llama.cpp's task loop, so that the loop has started: dropping the
        # server earlier (e.g. on a Ctrl-C just after the load) stops a loop not yet running,
        # which then runs for good, and the drop waits for it, GIL held (12 of 20 such drops hung).
        self._server.handle_metrics()

    def chat(self, body: dict[str, Any], should_stop: Callable[[], bool]) -> ChatResult:
        """Stream the answer (so that it can stop early) and return it as one completion."""
        content: list[str] = []
        final: ChatResult = {"finish_reason": None, "usage": {}, "timings": {}}
        error: ChatResult = {}

        def on_chunk(chunk: dict[str, Any]) -> bool:
            if "error" in chunk:
                error.update(chunk)
                return True
            for choice in chunk.get("choices") or ():
                content.append((choice.get("delta") or {}).get("content") or "")
                final["finish_reason"] = choice.get("finish_reason") or final["finish_reason"]
            final["usage"] = chunk.get("usage") or final["usage"]
            final["timings"] = chunk.get("timings") or final["timings"]
            return should_stop()

        stream = {**body, "stream": True, "stream_options": {"include_usage": True}}
        returned = self._server.handle_chat_completions(stream, on_chunk)
        if error or (isinstance(returned, dict) and "error" in returned):
            return error or returned
        message = {"role": "assistant", "content": "".join(content)}
        return {
            "choices": [{"index": 0, "message": message, "finish_reason": final["finish_reason"]}],
            "usage": final["usage"],
            "timings": final["timings"],
        }

    def close(self) -> None:
        """Drop the server; llama.cpp frees the model with it."""
        self._server = None


def translate_runtime_error(
    error: dict[str, Any], *, backend: str, attempts: int, context: str, n_ctx: int
) -> ExperienceModelError:
    """Map an error answer of the runtime to this package's error tree."""
    detail = error.get("error", error)
    code = detail.get("code", 500) if isinstance(detail, dict) else 500
    message = excerpt(str(detail.get("message", detail) if isinstance(detail, dict) else detail), 500)
    kwargs: dict[str, Any] = {"backend": backend, "attempts": attempts}
    if isinstance(detail, dict) and detail.get("type") == "exceed_context_size_error":
        return ModelRequestError(
            f"{context}: the prompt does not fit the context window (n_ctx={n_ctx}): {message}; "
            "pass a larger n_ctx, or shorten history_len or the demonstrations",
            **kwargs,
        )
    if isinstance(code, int) and code >= 500:
        return ModelServerError(f"{context}: the local model failed: {message}", **kwargs)
    return ModelRequestError(f"{context}: the local model refused the request: {message}", **kwargs)


def cached_tokens(result: ChatResult) -> int:
    """The prompt tokens a completion took from the KV cache instead of evaluating them."""
    details = (result.get("usage") or {}).get("prompt_tokens_details") or {}
    cached = details.get("cached_tokens")
    if cached is None:
        cached = (result.get("timings") or {}).get("cache_n")
    return int(cached or 0)


def grammar_schema(schema: Any) -> Any:
    """``schema`` as llama.cpp's decoding grammar can follow it.

    llama.cpp builds its grammar from types, properties and limits and ignores conditional rules
    (``allOf``/``if``/``then``/``else``). A single rule on one enumerated property ("if kind is
    one of E then item is required") becomes two alternatives (``anyOf``), one with the property
    in E and the rule's requirements, one with the property's other values, so the decoder
    cannot write an answer the rule forbids; other rules are left out of the grammar. The answer
    is still checked against the whole schema, and re-asked.
    """
    if isinstance(schema, dict):
        variants = _rule_variants(schema)
        if variants is not None:
            split: dict[str, Any] = {"anyOf": [grammar_schema(v) for v in variants]}
            if "$defs" in schema:
                split["$defs"] = grammar_schema(schema["$defs"])
            return split
        return {k: grammar_schema(v) for k, v in schema.items() if k not in ("allOf", "if", "then", "else")}
    if isinstance(schema, list):
        return [grammar_schema(v) for v in schema]
    return schema


def _rule_variants(schema: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The two alternatives of a schema whose one rule tests one enumerated property, else ``None``."""
    rules = schema.get("allOf")
    if not isinstance(rules, list) or len(rules) != 1 or not isinstance(rules[0], dict):
        return None
    condition, then = rules[0].get("if"), rules[0].get("then")
    if not isinstance(condition, dict) or not isinstance(then, dict) or "else" in rules[0]:
        return None
    tested = condition.get("properties") or {}
    properties = schema.get("properties") or {}
    if len(tested) != 1:
        return None
    ((name, test),) = tested.items()
    chosen = test.get("enum") or ([test["const"]] if "const" in test else [])
    spec = properties.get(name)
    if not chosen or not isinstance(spec, dict) or not isinstance(spec.get("enum"), list):
        return None
    base = {k: v for k, v in schema.items() if k not in ("allOf", "$defs")}
    inside = [v for v in spec["enum"] if v in chosen]
    outside = [v for v in spec["enum"] if v not in chosen]
    bound = {**properties, name: {**spec, "enum": inside}}
    for field_name in then.get("properties") or {}:
        if field_name in bound:  # e.g. "item": {"type": "object"}: not its null alternative
            bound[field_name] = _without_null(bound[field_name])
    required = list(dict.fromkeys([*base.get("required", []), *then.get("required", []), name]))
    variants = [
        {**base, "properties": bound, "required": required},
        {**base, "properties": {**properties, name: {**spec, "enum": outside}}},
    ]
    return [v for v in variants if v["properties"][name]["enum"]]


def _without_null(spec: Any) -> Any:
    """``spec`` without a ``{"type": "null"}`` alternative (a required object is not null)."""
    if not isinstance(spec, dict) or not isinstance(spec.get("anyOf"), list):
        return spec
    options = [o for o in spec["anyOf"] if o != {"type": "null"}]
    if len(options) == 1:
        return {**{k: v for k, v in spec.items() if k not in ("anyOf", "default")}, **options[0]}
    return {**spec, "anyOf": options}


class _Stopped(Exception):
    """A generation was stopped by its deadline."""


class _Cancelled(Exception):
    """A call was cancelled while it waited for a free slot."""


class LocalExperienceModel(ChatExperienceModel):
    """Experience model embedded in the process: a GGUF model run by llama.cpp on the CPU.

    The model file comes from ``model_path``, ``DREAMGYM_LOCAL_MODEL``, ``preset`` or
    ``DREAMGYM_LOCAL_MODEL_PRESET`` (see :mod:`dreamgym_env.experience.provision`); a preset is
    assembled and checksum-verified on first use. Weights load on the first prediction (or
    :meth:`load`). Keyword ``settings`` are the fields of :class:`LocalSettings`.

    Arguments:
        model_path: a GGUF file to load instead of a preset.
        preset: a preset name (``qwen-0.5b``, ``qwen-1.5b``).
        settings: a :class:`LocalSettings`; or pass its fields as keywords.
        runtime_factory: loads the file (default :class:`XllamacppRuntime`); tests pass a double.
        locate_parts: finds a preset's part files (default: installed packages).
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        *,
        preset: str | None = None,
        settings: LocalSettings | None = None,
        runtime_factory: RuntimeFactory | None = None,
        locate_parts: PartsLocator = installed_parts,
        **setting_values: Any,
    ) -> None:
        if settings is not None and setting_values:
            raise ConfigurationError("pass settings=... or its fields as keywords, not both")
        try:
            self.settings = settings or LocalSettings(**setting_values)
        except TypeError as exc:
            raise ConfigurationError(f"unknown local model setting: {exc}") from None
        if runtime_factory is None and not xllamacpp_installed():
            raise ConfigurationError(f"the local model needs the xllamacpp runtime: {LOCAL_EXTRA_HINT}")
        self.model_file, self.model_id = model_file(model_path, preset=preset, locate=locate_parts)
        if self.settings.lora_adapter is not None:  # another model: its own id (and cache keys)
            adapter = check_gguf(Path(self.settings.lora_adapter))
            self.model_id = f"{self.model_id}+{adapter.name}@{file_sha256(adapter)[:12]}"
        self.trained_model: TrainedModel | None = None
        """The trained model's manifest, where the adapter is a pack's or a training run's (set by selection)."""
        super().__init__(
            max_tokens=self.settings.max_tokens,
            max_reasks=self.settings.max_output_reasks,
            system_prompt=self.settings.system_prompt,
        )
        self._runtime_factory: RuntimeFactory = runtime_factory or XllamacppRuntime
        self._runtime: ChatRuntime | None = None
        self._lock = threading.Condition()  # guards _runtime and _active
        self._active = 0  # calls in the runtime now
        self._slots = threading.BoundedSemaphore(self.settings.n_parallel)
        self.load_s = 0.0

    @property
    def temperature(self) -> float:
        """The sampling temperature (0: the same request always gets the same answer)."""
        return self.settings.temperature

    @property
    def backend(self) -> str:
        """How errors and logs name this backend."""
        return f"local:{self.model_id}"

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(model_file={str(self.model_file)!r}, n_threads={self.settings.n_threads}, "
            f"n_parallel={self.settings.n_parallel})"
        )

    def describe(self) -> str:
        """The trained model it serves (or its model file), where that lies, and the threads it runs on."""
        threads = self.settings.n_threads
        where = f"run locally on {threads} thread{'' if threads == 1 else 's'}"
        if self.trained_model is not None:
            return f"{self.trained_model.describe()} in {self.trained_model.directory}, {where}"
        return f"{self.model_id} ({self.model_file}), {where}"

    def load(self) -> None:
        """Load the weights now (otherwise the first prediction does); a no-op once loaded."""
        with self._lock:
            self._loaded()

    def _loaded(self) -> ChatRuntime:
        if self._runtime is None:
            started = time.perf_counter()
            self._runtime = self._load_in_thread()
            self.load_s = time.perf_counter() - started
            logger.info(
                "loaded %s in %.1fs (%d threads, %d slots)",
                self.model_file,
                self.load_s,
                self.settings.n_threads,
                self.settings.n_parallel,
            )
        return self._runtime

    def _load_in_thread(self) -> ChatRuntime:
        """The runtime, loaded in a daemon thread while this thread waits, interruptibly.

        Python raises ``KeyboardInterrupt`` in the main thread only: a load there could be cut
        between llama.cpp's start and the round trip that makes its server safe to drop. After
        an interrupted wait the load ends on its own, and its runtime is dropped.
        """
        loading: concurrent.futures.Future[ChatRuntime] = concurrent.futures.Future()

        def load() -> None:
            try:
                loading.set_result(self._runtime_factory(self.model_file, self.settings))
            except BaseException as exc:  # raised to the caller
                loading.set_exception(exc)

        threading.Thread(target=load, name=f"{self.loop_name}-load", daemon=True).start()
        return wait_interruptibly(loading)

    def prime(self, domain_prompt: DomainPrompt, state_schema: dict[str, Any] | None = None) -> None:
        """Evaluate a domain's system prompt in every slot now (loading the weights if needed).

        Later requests of that domain and mode reuse it from the KV cache instead of each slot
        evaluating it on its first request; optional, it only moves that cost earlier. A no-op
        for a model that reads no system prompt.
        """
        if not self.settings.system_prompt:
            return
        system = system_prompt(domain_prompt, state_schema)
        body = {
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": "#"}],
            "max_tokens": 1,
            "temperature": 0.0,
        }

        async def prime_all() -> list[ChatResult]:
            calls = [
                asyncio.to_thread(self._generate_blocking, body, threading.Event())
                for _ in range(self.settings.n_parallel)
            ]
            return list(await asyncio.gather(*calls))

        for result in self.run(prime_all()):
            if "error" in result:
                raise translate_runtime_error(
                    result, backend=self.backend, attempts=1, context="priming", n_ctx=self.settings.n_ctx
                )

    async def aclose(self) -> None:
        """Free the weights (a later prediction loads them again)."""
        await asyncio.to_thread(self._unload)

    def _unload(self) -> None:
        with self._lock:
            self._lock.wait_for(lambda: self._active == 0)  # let running generations finish
            runtime, self._runtime = self._runtime, None
        if runtime is not None:
            runtime.close()

    async def complete(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        schema: Mapping[str, Any] | None = None,
        deadline: Deadline | None = None,
        context: str = "chat",
    ) -> ChatReply:
        """One chat completion of ``messages`` in a slot (with ``schema``: constrained to that JSON schema).

        No parsing and no re-ask (the experience model's loop, or a caller that reads the text
        itself, such as an LLM agent on the embedded model); the settings' temperature,
        ``max_tokens`` and ``timeout_s``, and typed errors. ``deadline`` is not used: the
        runtime's ``timeout_s`` bounds each call.
        """
        conversation = [dict(message) for message in messages]
        grammar = dict(schema) if schema is not None else None
        result = await self._generate(conversation, grammar, context=context, attempts=1)
        if "error" in result:
            raise translate_runtime_error(
                result, backend=self.backend, attempts=1, context=context, n_ctx=self.settings.n_ctx
            )
        timings = result.get("timings") or {}
        if timings:
            logger.debug(
                "%s: %d prompt tokens evaluated (%d cached) in %.1f s, %d generated in %.1f s",
                context,
                timings.get("prompt_n", 0),
                timings.get("cache_n", 0),
                timings.get("prompt_ms", 0) / 1000,
                timings.get("predicted_n", 0),
                timings.get("predicted_ms", 0) / 1000,
            )
        usage = result.get("usage") or {}
        choice = (result.get("choices") or [None])[0]
        prompt_tokens, completion_tokens = (
            int(usage.get("prompt_tokens") or 0),
            int(usage.get("completion_tokens") or 0),
        )
        if choice is None:
            return ChatReply(None, "no choices", prompt_tokens, completion_tokens)
        return ChatReply(
            str((choice.get("message") or {}).get("content") or ""),
            choice.get("finish_reason") or "stop",
            prompt_tokens,
            completion_tokens,
            cached_prompt_tokens=cached_tokens(result),
        )

    async def _generate(
        self,
        conversation: list[dict[str, str]],
        schema: dict[str, Any] | None,
        *,
        context: str,
        attempts: int,
    ) -> ChatResult:
        body: dict[str, Any] = {
            "messages": conversation,
            "temperature": self.settings.temperature,
            "max_tokens": self.settings.max_tokens,
            "seed": self.settings.seed,
        }
        if schema is not None:  # the output is constrained to the JSON schema
            body["response_format"] = {"type": "json_object", "schema": grammar_schema(schema)}
        stop = threading.Event()
        try:
            return await asyncio.to_thread(self._generate_blocking, body, stop)
        except asyncio.CancelledError:
            stop.set()  # the worker thread stops at its next token and gives back its slot
            raise
        except _Stopped:
            raise ModelTimeoutError(
                f"{context}: no answer within timeout_s={self.settings.timeout_s}",
                backend=self.backend,
                attempts=attempts,
            ) from None
        except (DataError, ConfigurationError):
            raise
        except Exception as exc:
            raise ModelTransportError(
                f"{context}: the local runtime failed: {type(exc).__name__}: {excerpt(str(exc), 300)}",
                backend=self.backend,
                attempts=attempts,
            ) from exc

    def _generate_blocking(self, body: dict[str, Any], stop: threading.Event) -> ChatResult:
        while not self._slots.acquire(timeout=0.05):  # a free slot, or the caller gives up
            if stop.is_set():
                raise _Cancelled
        try:
            with self._lock:
                runtime = self._loaded()
                self._active += 1
            try:
                timeout = self.settings.timeout_s
                deadline = None if timeout is None else time.monotonic() + timeout
                expired = threading.Event()

                def should_stop() -> bool:
                    if deadline is not None and time.monotonic() > deadline:
                        expired.set()
                    return stop.is_set() or expired.is_set()

                result = runtime.chat(body, should_stop)
            finally:
                with self._lock:
                    self._active -= 1
                    self._lock.notify_all()
        finally:
            self._slots.release()
        choices = result.get("choices") or [{}]
        if expired.is_set() and choices[0].get("finish_reason") is None:
            raise _Stopped  # cut by the deadline, not finished
        return result

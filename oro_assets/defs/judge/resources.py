"""The reasoning judge as a Dagster resource (rule judge by default, any OpenAI-compatible endpoint with ORO_JUDGE=llm).

The API key is never a field of this resource: it is read from OPENAI_API_KEY when the judge is
built, so it cannot appear in run config, the UI or logs.
"""


from pathlib import Path

import dagster as dg
from pydantic import Field

from oro_assets.settings import Settings


class JudgeResource(dg.ConfigurableResource):
    kind: str = Field(default="rule", description="rule (offline, deterministic) or llm (OpenAI-compatible endpoint).")
    cache_path: str = Field(default="", description="SQLite verdict cache; empty: no cache.")
    concurrency: int = Field(default=1, description="Judgings in flight at once while gating (an HTTP judge mostly waits).")
    base_url: str = Field(default="", description="The LLM judge's OpenAI-compatible endpoint (ORO_JUDGE_BASE_URL).")
    models: list[str] = Field(default_factory=list, description="Judge models, primary then fallbacks (ORO_JUDGE_MODEL).")
    min_agentic_richness: float = Field(default=-1.0, description=(
        "Gate on ORO's agentic_richness before the judge (ORO_MIN_AGENTIC_RICHNESS); below 0: off."))

    def build(self):
        from oro_assets.judge.factory import make_judge

        cache = Path(self.cache_path) if self.cache_path else None
        if cache is not None:
            cache.parent.mkdir(parents=True, exist_ok=True)
        return make_judge(kind=self.kind, cache_path=cache, base_url=self.base_url or None, models=self.models)


def judge_resource_from_settings(settings: Settings) -> JudgeResource:
    return JudgeResource(kind=settings.judge, cache_path=str(settings.state_dir / "judge_cache.sqlite"),
                         concurrency=settings.judge_concurrency if settings.judge == "llm" else 1,
                         base_url=settings.judge_base_url or "", models=list(settings.judge_models),
                         min_agentic_richness=-1.0 if settings.min_agentic_richness is None
                         else settings.min_agentic_richness)

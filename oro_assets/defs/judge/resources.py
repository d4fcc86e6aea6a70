"""The reasoning judge as a Dagster resource (rule judge by default, any OpenAI-compatible endpoint with ORO_JUDGE=llm).

The API key is never a field of this resource: it is read from OPENAI_API_KEY when the judge is
built, so it cannot appear in run config, the UI or logs.
"""


from pathlib import Path

import dagster as dg

from oro_assets.settings import Settings, load_settings


class JudgeResource(dg.ConfigurableResource):
    kind: str = "rule"
    cache_path: str = ""
    concurrency: int = 1  # judgings in flight at once while gating (an HTTP judge mostly waits)

    def build(self):
        from oro_assets.judge.factory import make_judge

        cache = Path(self.cache_path) if self.cache_path else None
        if cache is not None:
            cache.parent.mkdir(parents=True, exist_ok=True)
        return make_judge(load_settings(), kind=self.kind, cache_path=cache)


def judge_resource_from_settings(settings: Settings) -> JudgeResource:
    return JudgeResource(kind=settings.judge, cache_path=str(settings.state_dir / "judge_cache.sqlite"),
                         concurrency=settings.judge_concurrency if settings.judge == "llm" else 1)

"""The curation steps, one module each (an asset's code version covers its step's module and what it
imports); the declared sequence is ``oro_assets.curation.pipeline.STEPS``."""

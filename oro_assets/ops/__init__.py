"""Operating the platform from the command line: the main job, materialisations, backfills, the UI."""

"""Plan files: loading and checking ``plan.toml`` (`load`, its schema in `schema`, write scopes that
may meet in `scopes`) and writing a plan back (`save`)."""

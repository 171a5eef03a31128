"""Discovery, configuration resolution, content-hash cache, parallel runner, suppressions."""

"""The engine's own codes: FX001 parse error, FX002 suppression without reason, FX003 unused suppression."""

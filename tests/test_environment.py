"""What the programs the daemon starts are given of its environment (actors/peers/program.py)."""

from __future__ import annotations

import pytest

from actors.process import child_environment, command_environment
from actors.tools.shell import run_command

SECRETS = {"OPENAI_API_KEY": "sk-a", "ANTHROPIC_AUTH_TOKEN": "t-b", "HF_TOKEN": "hf-c",
           "AWS_SECRET_ACCESS_KEY": "aws-d", "BMOE_API_KEY": "bmoe-e"}


@pytest.fixture
def secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("PLAIN_SETTING", "kept")


def test_a_command_gets_no_provider_key_and_no_daemon_variable(secrets):
    env = command_environment()
    assert not set(SECRETS) & set(env) and env["PLAIN_SETTING"] == "kept"
    # Another agent may use its own account: it keeps the provider keys, not the daemon's own.
    agent = child_environment()
    assert agent["OPENAI_API_KEY"] == "sk-a" and "BMOE_API_KEY" not in agent


async def test_a_command_the_model_runs_cannot_print_them(secrets, tmp_path):
    output, code, _ = await run_command("env", str(tmp_path), 10, 64 * 1024)
    assert code == 0 and "PLAIN_SETTING=kept" in output
    for value in SECRETS.values():
        assert value not in output

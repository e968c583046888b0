"""The daemon's actors: the engine's turn line, conversations and their runs, tools.

Nothing in this package knows about HTTP; `bmoe_daemon` translates requests into
messages to these actors and their broadcasts into events.

The layers, lowest first (tests/test_house.py checks that imports only run down them,
with no cycle at any level):

    errors, ids, notices               what every part names
    actor, bus, process, fs/, sandbox/ actor plumbing, the event bus, child processes, files,
                                       the OS sandbox around the model's commands
    model/                             the turn contract, the engine, backends, model files, the usage ledger
    tools/                             the workspace tools and their registry
    skills/, record/, checkpoints/     skills; a conversation's record; the workspace's checkpoints
    policy/, peers/                    whether a call runs; programs spoken to over JSON-RPC
    runs/                              what works a message: the built-in agent, another agent
    conversations/                     the conversation actors and the hub
    scheduling/                        tasks on a schedule
"""

// The tools every run offers, in the order the model sees them. A new tool is one file in this
// folder and one entry here (at the end: the list is the start of every cached prompt).
import { toolRegistry } from '../registry.ts';
import { bash } from './bash.ts';
import { edit } from './edit.ts';
import { memorySearch } from './memory-search.ts';
import { read } from './read.ts';
import { searchChannel } from './search-channel.ts';
import { subagent } from './subagent.ts';
import { upload } from './upload.ts';
import { write } from './write.ts';

export const BUILTIN_TOOLS = toolRegistry([bash, read, write, edit, upload, searchChannel, memorySearch, subagent]);

// Stands in for mime-db, the media type database (136 KB minified), in the bundles of the functions
// that talk to Slack (an esbuild alias set in infra/constructs/agent-function.ts). Its one user
// there is form-data (under axios and the Slack Web API client), which looks up a file part's media
// type by its file name, and only for an API call with binary arguments sent as multipart. This
// deployment sends none: the Slack adapter uploads files through files.uploadV2's upload URL, and
// a Buffer part is named "Untitled", which no database entry matches. Without the database such a
// part goes as application/octet-stream, which is what it goes as today.
const mediaTypes: Record<string, { extensions?: string[]; charset?: string; source?: string }> = {};
export default mediaTypes;

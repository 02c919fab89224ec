// Who the key belongs to (GET /whoami): the console offers only what the key's scopes allow. The server
// checks every call anyway; hiding a control is a courtesy, not the protection.
export const session = {
  who: null,
  can(scope) {
    return Boolean(this.who && this.who.scopes.includes(scope));
  },
};
